"""Shut the Box for N players in turn (2..6), for a share of the win or for stakes."""
