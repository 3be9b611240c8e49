"""Knucklebones (seed 004): rules, canonical positions, graph builder and expectimax search."""
