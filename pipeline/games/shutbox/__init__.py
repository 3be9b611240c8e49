"""One-player Shut the Box: rules, graph builder, named variants, strategies and their benchmark."""
