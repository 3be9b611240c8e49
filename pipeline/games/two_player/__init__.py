"""The two-player game of the course assignment: scores carried between turns, the mover's
expected wins."""
