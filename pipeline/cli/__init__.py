"""The stb-pipeline command line: Typer commands that parse, call one library function and print."""
