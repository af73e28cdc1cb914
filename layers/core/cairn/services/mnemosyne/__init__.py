"""Mnemosyne's domain: libraries, collections and items (libraries, item_status, image_items,
library_profiles), fused search with a re-ranker (library_search), and the concept graph
(concepts, concept_rules)."""
