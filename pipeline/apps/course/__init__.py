"""The two-player course assignment: the ShutTheBox command and its verifier file format."""
