from pipeline.cli.lean import main

main()
