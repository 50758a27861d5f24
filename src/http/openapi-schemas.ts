/**
 * Pure rewrites of the JSON schemas and paths that @elysiajs/openapi generates from the routes,
 * so that the document is OpenAPI 3.1 that validators and code generators read as meant
 * (src/http/openapi.ts applies them).
 */

/**
 * A schema of what the server sends, from a `t` schema: Elysia's `t.Integer` and `t.Numeric`
 * also accept a numeric string (they coerce what a client sends), but an answer holds the number,
 * so only that branch is kept; `nullable`, Elysia's OpenAPI 3.0 mark beside the 3.1 null type,
 * goes (see `noNullable`).
 */
export function answerSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(answerSchema);
  if (!schema || typeof schema !== "object") return schema;
  const { nullable: _, ...s } = schema as Record<string, unknown>;
  const numeric = coercedNumber(s);
  if (numeric) {
    const { anyOf: _branches, ...outer } = s;
    return answerSchema({ ...outer, ...numeric });
  }
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, answerSchema(v)]));
}

/** The string branch Elysia gives a coercing number (`format: "integer"` or `"numeric"`). */
export const isNumericString = (b: unknown): boolean => {
  const s = b as Record<string, unknown> | null;
  return !!s && s.type === "string" && (s.format === "integer" || s.format === "numeric");
};

/** The number branch of a coercing number (`anyOf` of a numeric string and a number), or undefined. */
function coercedNumber(s: Record<string, unknown>): Record<string, unknown> | undefined {
  const branches = s.anyOf;
  if (!Array.isArray(branches) || branches.length !== 2 || !branches.some(isNumericString)) return undefined;
  const number = branches.find((b) => !isNumericString(b)) as Record<string, unknown> | undefined;
  return number && (number.type === "integer" || number.type === "number") ? number : undefined;
}

/** The path parameters a `/dam` route's trailing `*` stands for (docs/dam.md). */
const WILDCARDS: Record<string, { name: string; description: string }[]> = {
  transform: [
    { name: "pathname", description: "the original's storage pathname (`<asset gid>~<version>.<ext>`)" },
    {
      name: "options",
      description:
        "the transform's `name=value` options, each its own path segment (`fit=400,300/bg=ffffff/q=85`): send the slashes between them as they are, not as %2F (docs/dam.md lists every option)",
    },
  ],
  default: [{ name: "pathname", description: "the original's storage pathname (`<asset gid>~<version>.<ext>`)" }],
};

/**
 * The `/dam` routes end in `*` (the rest of the path), which is no OpenAPI path template: a
 * client would send the `*`, and the operationIds Elysia makes of it are no identifiers. Each
 * becomes named path parameters, and its operationId follows.
 */
export function namedWildcards(paths: Record<string, Record<string, any>>): Record<string, Record<string, any>> {
  const out: Record<string, Record<string, any>> = {};
  for (const [path, ops] of Object.entries(paths)) {
    const m = path.match(/\/([a-z_]+)\/\*$/);
    if (!m) {
      out[path] = ops;
      continue;
    }
    const names = WILDCARDS[m[1]!] ?? WILDCARDS.default!;
    const named = `${path.slice(0, -1)}${names.map((n) => `{${n.name}}`).join("/")}`;
    out[named] = Object.fromEntries(
      Object.entries(ops).map(([method, op]) => [
        method,
        {
          ...op,
          operationId: String(op.operationId).replace(
            /\*$/,
            `By${names.map((n) => n.name[0]!.toUpperCase() + n.name.slice(1)).join("And")}`,
          ),
          parameters: [
            ...(op.parameters ?? []),
            ...names.map((n) => ({
              name: n.name,
              in: "path",
              required: true,
              description: n.description,
              schema: { type: "string" },
            })),
          ],
        },
      ]),
    );
  }
  return out;
}

/**
 * Removes `nullable`, OpenAPI 3.0's way of allowing null that 3.1 dropped (validators refuse it
 * without a `type` beside it): Elysia's `t.Nullable` writes it beside the `anyOf` with a null
 * branch that says the same in 3.1. Also drops the `default: 0` Elysia gives the numeric-string
 * branch of a coercing number (`t.Integer`, `t.Numeric`): no member defaults to 0 because of it.
 */
export function noNullable(node: unknown): void {
  if (Array.isArray(node)) for (const v of node) noNullable(v);
  else if (node && typeof node === "object") {
    const s = node as Record<string, unknown>;
    delete s.nullable;
    if (isNumericString(s)) delete s.default;
    for (const v of Object.values(s)) noNullable(v);
  }
}
