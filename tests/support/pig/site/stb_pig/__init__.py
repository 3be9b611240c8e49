"""Pig, a game family of stb-pipeline that lives outside it (an installed package's entry point
in the group ``stb_pipeline.families`` names :mod:`stb_pig.variants`)."""
