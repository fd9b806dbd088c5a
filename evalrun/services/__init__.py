"""Services evalrun starts for the evals that use them: processes, embedded PostgreSQL, leftovers of killed runs."""
