// Style sheets imported from TypeScript are bundled by Bun beside the console's own app.css.
declare module "*.css";
