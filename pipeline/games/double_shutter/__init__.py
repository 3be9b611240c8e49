"""Double Shutter (seed 001): two rows of tiles, the front row scores double."""
