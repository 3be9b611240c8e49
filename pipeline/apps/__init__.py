"""Applications of particular games: the teaching game, the course-compatible ShutTheBox,
Knucklebones play, the explorer page."""
