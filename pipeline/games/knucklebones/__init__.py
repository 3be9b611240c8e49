"""Knucklebones (the Rust solver's rules): positions, graph builder and expectimax search."""
