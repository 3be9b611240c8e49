"""Analysis of built tables: SQL queries, data contracts, answers to questions, the report."""
