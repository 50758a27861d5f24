import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: ["./src/db/*.table.ts", "./src/platform/**/*.table.ts", "./src/features/**/*.table.ts"],
  out: "./drizzle",
});
