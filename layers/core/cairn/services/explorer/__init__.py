"""What the web UI reads (entrypoints/ui/): brains with the surfaces they serve and their sizes
(overview.py), a brain's items filtered and paged with a bounded read per page (items.py), one item
in full (detail.py) and the graph of links around it (neighbourhood.py). Every read goes through the
repositories, so the access rule decides what a caller sees here as on every surface."""
