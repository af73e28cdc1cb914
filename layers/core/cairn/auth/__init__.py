"""Who is calling: principals, and the ways a caller proves who it is (docs/AUTH.md)."""
