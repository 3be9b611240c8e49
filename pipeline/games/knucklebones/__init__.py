"""Knucklebones (the Rust solver's rules): positions, graph builder and expectimax search."""

#: The deepest search any face asks (placements): a player's name, the `knucklebones` commands'
#: ``--depth``, the answers. Here, not in a module of the game: a command's help text reads it.
DEEPEST = 8
