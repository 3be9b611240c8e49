"""Full-size Knucklebones: analyse a position, show the search tree, play matches.

The constants below are what the command line needs for its help texts without loading numba.
"""

#: Named opponents of `knucklebones benchmark` (besides seed-dN and ours-dN).
OPPONENTS = ("random", "greedy", "seed-d2")
