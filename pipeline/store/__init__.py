"""Storage of solved tables: Parquet layout, atomic commits, the manifest."""
