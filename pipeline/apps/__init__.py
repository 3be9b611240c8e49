"""Applications of particular games: the teaching game, the course-compatible ShutTheBox and
Knucklebones play."""
