import { defineConfig } from "drizzle-kit";

// The PostgreSQL twin of drizzle.config.ts: `npm run db:generate:pg` (drizzle-kit generate --config
// drizzle.pg.config.ts, then scripts/embed-pg-migrations.ts). drizzle-pg/0000_extensions.sql is
// hand-written (extensions, text search configurations, apis_json_text) and comes first.
export default defineConfig({
  dialect: "postgresql",
  schema: ["./src/db/pg/schema.ts"],
  out: "./drizzle-pg",
});
