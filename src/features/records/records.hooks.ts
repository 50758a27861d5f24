/** How records follow the schema (commit hooks, usage checks); filled in below. */
export {};
