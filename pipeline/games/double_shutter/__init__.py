"""Double Shutter (the Double Shutter article): two rows of tiles, the front row scores double."""
