"""gbrain's domain: pages over documents (pages, page_search), assertions and brain_check
(assertions, page_assertions), knowledge gaps, raw data, and integer ids (sequences)."""
