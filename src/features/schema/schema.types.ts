import { z } from "zod";
import type { ValidationIssue } from "../../core/errors";

/**
 * Field types: for each type one zod schema of its options and one builder of the zod schema of
 * a value (one language's value; localization is the records' business). The records area
 * validates values with `valueSchema(field, ...)` and nothing else, so a type's rules live here.
 */

export const FIELD_TYPES = [
  "text",
  "textline",
  "textlist",
  "number",
  "decimal",
  "boolean",
  "barcode",
  "date",
  "image",
  "imagelist",
  "file",
  "filelist",
  "record",
  "recordlist",
  "class",
  "classlist",
  "fieldpicker",
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/**
 * The schema items that own a layout (and share one working-copy life cycle): classes and
 * definitions. Declared here, beside the other schema types, so the classes and the layouts
 * services both use it without importing each other for it.
 */
export type Owner = "class" | "definition";
const TYPE_SET = new Set<string>(FIELD_TYPES);
export const isFieldType = (t: unknown): t is FieldType => typeof t === "string" && TYPE_SET.has(t);

/** The types whose value is a list. */
export const LIST_TYPES = new Set<FieldType>(["textlist", "imagelist", "filelist", "recordlist", "classlist"]);

const GID = z.string().min(1).max(100);
const count = z.number().int().min(0).max(1_000_000);
/** A value-list entry of textline/textlist: a key (stored in records) and a localized label. */
const valueEntry = z.strictObject({
  key: z.string().min(1).max(200),
  label: z.record(z.string(), z.string().max(1000)).default({}),
});
const textOptions = z.strictObject({
  min_length: count.optional(),
  max_length: count.optional(),
  values: z.array(valueEntry).max(10_000).optional(),
});
const listBounds = { min_items: count.optional(), max_items: count.optional() };
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True for a real calendar date written YYYY-MM-DD. */
function isDate(v: string): boolean {
  const m = DATE.exec(v);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}
const dateString = z.string().refine(isDate, "a date written YYYY-MM-DD");

export const BARCODE_FORMATS = ["any", "ean8", "ean13", "upca", "gtin14"] as const;

/** The options schema of every type: unknown members are refused, so typos do not pass silently. */
const OPTIONS: Record<FieldType, z.ZodType<Record<string, unknown>>> = {
  text: z.strictObject({ min_length: count.optional(), max_length: count.optional() }),
  textline: textOptions,
  textlist: textOptions.extend(listBounds),
  number: z.strictObject({ min: z.number().int().optional(), max: z.number().int().optional() }),
  decimal: z.strictObject({
    min: z.number().optional(),
    max: z.number().optional(),
    decimals: z.number().int().min(0).max(12).optional(),
  }),
  boolean: z.strictObject({}),
  barcode: z.strictObject({ format: z.enum(BARCODE_FORMATS).optional() }),
  date: z.strictObject({ min: dateString.optional(), max: dateString.optional() }),
  image: z.strictObject({}),
  imagelist: z.strictObject(listBounds),
  file: z.strictObject({}),
  filelist: z.strictObject(listBounds),
  record: z.strictObject({ definitions: z.array(GID).max(1000).optional() }),
  recordlist: z.strictObject({ definitions: z.array(GID).max(1000).optional(), ...listBounds }),
  class: z.strictObject({ class: GID }),
  classlist: z.strictObject({ class: GID, ...listBounds }),
  fieldpicker: z.strictObject({ types: z.array(z.enum(FIELD_TYPES)).optional() }),
};

function issuesOf(error: z.ZodError, prefix: string): ValidationIssue[] {
  return error.issues.map((i) => ({
    field: [prefix, ...i.path.map(String)].filter(Boolean).join("."),
    rule: i.code,
    message: i.message,
  }));
}

/** Rules across members (min ≤ max, ...), after the shape is right. */
function crossIssues(options: Record<string, unknown>): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const pair = (lo: string, hi: string) => {
    const a = options[lo],
      b = options[hi];
    if (a !== undefined && b !== undefined && (a as number | string) > (b as number | string))
      out.push({ field: `options.${lo}`, rule: "range", message: `${lo} must not be above ${hi}` });
  };
  pair("min", "max");
  pair("min_length", "max_length");
  pair("min_items", "max_items");
  const values = options.values as { key: string }[] | undefined;
  if (values) {
    const seen = new Set<string>();
    values.forEach((v, i) => {
      if (seen.has(v.key))
        out.push({ field: `options.values.${i}.key`, rule: "unique", message: `duplicate key ${v.key}` });
      seen.add(v.key);
    });
  }
  return out;
}

/**
 * The options of a type checked and normalized; `issues` lists what is wrong (fields named
 * `options.<member>`) and is empty when they are valid.
 */
export function checkOptions(
  type: FieldType,
  options: unknown,
): { options: Record<string, unknown>; issues: ValidationIssue[] } {
  const r = OPTIONS[type].safeParse(options ?? {});
  if (!r.success) return { options: {}, issues: issuesOf(r.error, "options") };
  return { options: r.data, issues: crossIssues(r.data) };
}

/** What a value schema needs of a field. */
export type FieldLike = { gid?: string; name: string; type: string; options: Record<string, unknown> };

/** How nested class values find the fields of their class (committed fields, in class order). */
type ValueContext = { classFields?: (classGid: string) => FieldLike[] | undefined };

const MAX_DEPTH = 8;

function gtinOk(code: string): boolean {
  const digits = [...code].map(Number);
  const check = digits.pop()!;
  let sum = 0;
  digits.reverse().forEach((d, i) => (sum += d * (i % 2 === 0 ? 3 : 1)));
  return (10 - (sum % 10)) % 10 === check;
}

const BARCODE_LENGTH: Record<string, number> = { ean8: 8, ean13: 13, upca: 12, gtin14: 14 };

function withLength(s: z.ZodString, o: Record<string, unknown>): z.ZodString {
  if (typeof o.min_length === "number") s = s.min(o.min_length);
  if (typeof o.max_length === "number") s = s.max(o.max_length);
  return s;
}

function withItems<T extends z.ZodType>(item: T, o: Record<string, unknown>) {
  let a = z.array(item);
  if (typeof o.min_items === "number") a = a.min(o.min_items);
  if (typeof o.max_items === "number") a = a.max(o.max_items);
  return a;
}

/** A textline/textlist line: one line, and one of the value keys when the field has values. */
function lineSchema(o: Record<string, unknown>): z.ZodType<string> {
  const values = o.values as { key: string }[] | undefined;
  const line = withLength(z.string(), o).refine((s) => !/[\r\n]/.test(s), "a single line (no line breaks)");
  if (!values?.length) return line;
  const keys = new Set(values.map((v) => v.key));
  return line.refine(
    (s) => s === "" || keys.has(s),
    `one of the keys of the field's values: ${[...keys].slice(0, 20).join(", ")}`,
  );
}

/**
 * The zod schema of one value of `field` (one language; null or absent means empty). Class and
 * classlist values are objects keyed by the class's field names, each checked by its own field's
 * schema through `ctx.classFields` (nesting is capped, so a class cycle cannot loop).
 */
export function valueSchema(field: FieldLike, ctx: ValueContext = {}, depth = 0): z.ZodType {
  const o = field.options ?? {};
  const gid = GID;
  let s: z.ZodType;
  switch (field.type as FieldType) {
    case "text":
      s = withLength(z.string(), o);
      break;
    case "textline":
      s = lineSchema(o);
      break;
    case "textlist":
      s = withItems(lineSchema(o), o);
      break;
    case "number": {
      let n = z.number().int();
      if (typeof o.min === "number") n = n.min(o.min);
      if (typeof o.max === "number") n = n.max(o.max);
      s = n;
      break;
    }
    case "decimal": {
      let n = z.number().finite();
      if (typeof o.min === "number") n = n.min(o.min);
      if (typeof o.max === "number") n = n.max(o.max);
      const d = o.decimals;
      s =
        typeof d === "number"
          ? n.refine((v) => Math.abs(Math.round(v * 10 ** d) - v * 10 ** d) < 1e-6, `at most ${d} decimals`)
          : n;
      break;
    }
    case "boolean":
      s = z.boolean();
      break;
    case "barcode": {
      const format = (o.format as string | undefined) ?? "any";
      const len = BARCODE_LENGTH[format];
      s = len
        ? z
            .string()
            .regex(new RegExp(`^\\d{${len}}$`), `${len} digits`)
            .refine(gtinOk, "a valid check digit")
        : z
            .string()
            .max(200)
            .regex(/^[\x20-\x7e]*$/, "printable ASCII characters");
      break;
    }
    case "date": {
      let d = dateString;
      if (typeof o.min === "string") d = d.refine((v) => v >= (o.min as string), `on or after ${o.min}`);
      if (typeof o.max === "string") d = d.refine((v) => v <= (o.max as string), `on or before ${o.max}`);
      s = d;
      break;
    }
    case "image":
    case "file":
    case "record":
    case "fieldpicker":
      s = gid;
      break;
    case "imagelist":
    case "filelist":
    case "recordlist":
      s = withItems(gid, o);
      break;
    case "class":
    case "classlist": {
      const members = typeof o.class === "string" && depth < MAX_DEPTH ? ctx.classFields?.(o.class) : undefined;
      // Built from entries: a field named `__proto__` becomes an own member, not the prototype.
      const shape: Record<string, z.ZodType> = Object.fromEntries(
        (members ?? []).map((f) => [f.name, valueSchema(f, ctx, depth + 1).optional()]),
      );
      const obj = members ? z.strictObject(shape) : z.record(z.string(), z.unknown());
      s = field.type === "class" ? obj : withItems(obj, o);
      break;
    }
    default:
      s = z.never();
  }
  return s.nullable().optional();
}

/** A value checked against its field: the issues (empty when valid), fields named after `path`. */
export function checkValue(
  field: FieldLike,
  value: unknown,
  ctx: ValueContext = {},
  path = "value",
): ValidationIssue[] {
  const r = valueSchema(field, ctx).safeParse(value);
  return r.success ? [] : issuesOf(r.error, path);
}
