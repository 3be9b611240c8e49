"""The two-player game of seed 002: scores carried between turns, the mover's expected wins."""
