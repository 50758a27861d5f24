/** Scalar's standalone browser build, imported as text (`with { type: "text" }`) by src/http/openapi.ts. */
declare module "@scalar/api-reference/browser/standalone.js" {
  const text: string;
  export default text;
}
