import { ApiError, call, p, upload } from "./http";
import { entries } from "./views";

// ---------------------------------------------------------------------------------------------
// Records (/api/p/<project>/records, docs/records.md) and the read side of the schema they are
// typed by (definitions, classes, fields, layouts: docs/schema.md). Used by pages/records/.

export type RecordItem = {
  gid: string;
  parent: string | null;
  canonical: string;
  backlinks: string[];
  treelevel: number;
  /** From the record itself up to the root. */
  path: string[];
  childcount: number;
  definition: string;
  title: Record<string, string>;
  status: "published" | "deleted";
  channels: string[];
  orderings: Record<string, number>;
  isLink: boolean;
  /** Language → field name → value (`<name>/key` members beside value-list fields). */
  fields: Record<string, Record<string, unknown>>;
  createdOn: number;
  updatedOn: number;
};

export type FieldDef = {
  gid: string;
  name: string;
  label: Record<string, string>;
  type: string;
  options: Record<string, any>;
  isLocalized: boolean;
  isRequired: boolean;
  unit: string;
};
export type DefinitionDef = {
  gid: string;
  name: string;
  label: Record<string, string>;
  fields: string[];
  classes: string[];
  layout: string | null;
  isExtended: boolean;
  /** Definitions offered for this definition's records' children (the reference's childdefinitions). */
  childdefinitions: string[];
  /** The field whose value is a record's title. */
  titlefield: string | null;
  /** Per project fieldlist (its key): the fields of this definition it shows. */
  fieldlists: Record<string, string[]>;
};
export type ClassDef = {
  gid: string;
  name: string;
  label: Record<string, string>;
  fields: string[];
  layout: string | null;
};
export type LayoutPart = { type: string; name?: string | null; content?: string[]; options?: Record<string, any> };
export type LayoutDef = { gid: string; root: string; components: Record<string, LayoutPart> };
/** One line of `report.validation`: a refused value (`error`) or a written one with a remark (`warning`). */
export type ValueReport = {
  record: string;
  language: string | null;
  field: string;
  level: "error" | "warning";
  code: string;
  message: string;
  /** The failed check, machine-readable (docs/records.md): field_type, expected, minimum, maximum, received... */
  rule?: Record<string, unknown>;
};
/** A record's completeness: per language, its required fields filled (percent, counts, the missing names). */
export type Completeness = {
  inChannel: boolean;
  languages: Record<string, { percent: number; required: number; filled: number; missing: string[] }>;
};
export type RecordsPage = { items: RecordItem[]; total: number };
/** A bulk selection element: a gid, a parent's children, or a search. */
export type Selection = (
  | string
  | { children: string; exclude?: string[] }
  | { search: { language?: string; q?: string; filter?: unknown }; exclude?: string[] }
)[];
export type BulkOp = "delete" | "undelete" | "move" | "link" | "shallow_copy" | "duplicate" | "channels/set" | "update";
export type ExcelResult = { name: string; file: Blob; counts: Record<string, number>; report: ValueReport[] };

const XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const obj = (v: unknown): Record<string, any> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, any>) : {};
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

function toRecord(r: any): RecordItem {
  return {
    gid: r.gid,
    parent: r.parent ?? null,
    canonical: r.canonical ?? r.gid,
    backlinks: strs(r.backlinks),
    treelevel: r.treelevel ?? 0,
    path: strs(r.path),
    childcount: r.childcount ?? 0,
    definition: r.definition ?? "",
    title: obj(r.title),
    status: r.status === "deleted" ? "deleted" : "published",
    channels: strs(r.channels),
    orderings: obj(r.orderings),
    isLink: !!r.is_link,
    fields: obj(r.fields),
    createdOn: r.created_on ?? 0,
    updatedOn: r.updated_on ?? 0,
  };
}
const recordMap = (data: any) => new Map(entries(data?.records).map(([k, v]) => [k, toRecord(v)]));
function inOrder<T>(gids: unknown, map: Map<string, T>): T[] {
  return strs(gids)
    .map((g) => map.get(g))
    .filter((x): x is T => !!x);
}
const toField = (f: any): FieldDef => ({
  gid: f.gid,
  name: f.name,
  label: obj(f.label),
  type: f.type,
  options: obj(f.options),
  isLocalized: !!f.is_localized,
  isRequired: !!f.is_required,
  unit: f.unit ?? "",
});
const toDefinition = (d: any): DefinitionDef => ({
  gid: d.gid,
  name: d.name,
  label: obj(d.label),
  fields: strs(d.fields),
  classes: strs(d.classes),
  layout: d.layout ?? null,
  isExtended: !!d.is_extended,
  childdefinitions: strs(d.childdefinitions),
  titlefield: d.titlefield ?? null,
  fieldlists: Object.fromEntries(entries(d.fieldlists).map(([k, v]) => [k, strs(v)])),
});
const toClass = (c: any): ClassDef => ({
  gid: c.gid,
  name: c.name,
  label: obj(c.label),
  fields: strs(c.fields),
  layout: c.layout ?? null,
});
const toLayout = (l: any): LayoutDef => ({ gid: l.gid, root: l.root, components: obj(l.components) });
const mapOf = <T>(data: any, key: string, fn: (v: any) => T) =>
  new Map(entries(data?.[key]).map(([k, v]) => [k, fn(v)]));

function report(result: any): ValueReport[] {
  return (Array.isArray(result?.["report.validation"]) ? result["report.validation"] : []) as ValueReport[];
}
function fileOf(data: any, name: unknown): Blob | null {
  const b64 = typeof name === "string" ? data?.files?.[name] : undefined;
  if (typeof b64 !== "string") return null;
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Blob([bytes], { type: XLSX });
}
/** The marked-up workbook of a refused import (code 1005), if the error carries one. */
export function excelErrorFile(
  e: unknown,
): { name: string; file: Blob; problems: { cell: string; message: string }[] } | null {
  if (!(e instanceof ApiError) || e.code !== 1005) return null;
  const name = e.info["report.excel"];
  const file = fileOf(e.info, name);
  return file
    ? {
        name: String(name),
        file,
        problems: (Array.isArray(e.info.problems) ? e.info.problems : []) as { cell: string; message: string }[],
      }
    : null;
}

const rp = (project: string, op: string) => p(project, `records/${op}`);
type Place = { parent: string; ordering?: string; before?: string | null };
const placeBody = (record: string, to: Place) => ({
  record,
  parent: to.parent,
  ...(to.ordering ? { ordering: to.ordering } : {}),
  ...(to.before ? { before_record: to.before } : {}),
});

export const recordsApi = {
  async root(project: string, language?: string): Promise<RecordItem> {
    const env = await call(rp(project, "root"), language ? { language } : {});
    return recordMap(env.data).get(env.result.root)!;
  },
  async get(project: string, gids: string[], languages?: string[]): Promise<Map<string, RecordItem>> {
    if (!gids.length) return new Map();
    return recordMap(
      (await call(rp(project, "get"), { records: gids.slice(0, 1000), ...(languages ? { languages } : {}) })).data,
    );
  },
  async one(project: string, gid: string): Promise<RecordItem> {
    return recordMap((await call(rp(project, "get"), { record: gid })).data).get(gid)!;
  },
  async children(
    project: string,
    parent: string,
    o: { channel?: string; ordering?: string; top?: number; size?: number; language?: string },
  ): Promise<RecordsPage> {
    const body: Record<string, unknown> = { record: parent, "page.top": o.top ?? 0, "page.size": o.size ?? 100 };
    if (o.channel) body.channel = o.channel;
    if (o.ordering) body.ordering = o.ordering;
    if (o.language) body.language = o.language;
    const env = await call(rp(project, "children"), body);
    return { items: inOrder(env.result.children, recordMap(env.data)), total: env.result["children.size"] ?? 0 };
  },
  /** A parent's grid: its path (root first), one page of children, and the definitions and layouts they use. */
  async worksheet(
    project: string,
    record: string,
    o: { ordering: string; top?: number; size?: number; language?: string },
  ) {
    const env = await call(rp(project, "worksheet"), {
      record,
      ordering: o.ordering,
      "page.top": o.top ?? 0,
      "page.size": o.size ?? 50,
      ...(o.language ? { language: o.language } : {}),
    });
    const recs = recordMap(env.data);
    const defs = mapOf(env.data, "definitions", toDefinition);
    return {
      record: recs.get(env.result.record)!,
      path: inOrder(env.result.path, recs),
      children: inOrder(env.result.children, recs),
      total: (env.result["children.size"] ?? 0) as number,
      definitions: inOrder(env.result.sibling_definitions, defs),
    };
  },
  /** Required fields filled per record and language (records/completeness, an Apis extension). */
  async completeness(
    project: string,
    o: { records: string[]; languages: string[]; channel?: string },
  ): Promise<Map<string, Completeness>> {
    if (!o.records.length) return new Map();
    const env = await call(rp(project, "completeness"), {
      records: o.records.slice(0, 1000),
      languages: o.languages,
      ...(o.channel ? { channel: o.channel } : {}),
    });
    return new Map(
      entries(env.result?.completeness).map(([g, c]) => [
        g,
        { inChannel: c?.in_channel !== false, languages: (c?.languages ?? {}) as Completeness["languages"] },
      ]),
    );
  },
  async create(project: string, parent: string, ordering?: string): Promise<RecordItem> {
    const env = await call(rp(project, "create"), ordering ? { parent, ordering } : { parent });
    return recordMap(env.data).get(env.result.record)!;
  },
  /** Writes values (language → field name → value); invalid ones are refused and reported, the rest written. */
  async update(
    project: string,
    record: string,
    fields: Record<string, Record<string, unknown>>,
  ): Promise<{ record: RecordItem | undefined; report: ValueReport[] }> {
    const env = await call(rp(project, "update"), { record, fields });
    return { record: recordMap(env.data).get(record), report: report(env.result) };
  },
  async setDefinition(project: string, record: string, definition: string): Promise<void> {
    await call(rp(project, "definition/set"), { record, definition });
  },
  async move(project: string, record: string, to: Place): Promise<void> {
    await call(rp(project, "move"), placeBody(record, to));
  },
  /** A linked copy (kept in step with its canonical); answers the new record's gid. */
  async link(project: string, record: string, to: Place): Promise<string> {
    return (await call(rp(project, "link"), placeBody(record, to))).result.record;
  },
  async shallowCopy(project: string, record: string, to: Place): Promise<string> {
    return (await call(rp(project, "shallow_copy"), placeBody(record, to))).result.record;
  },
  async duplicate(project: string, record: string, ordering?: string): Promise<string> {
    return (await call(rp(project, "duplicate"), ordering ? { record, ordering } : { record })).result.record;
  },
  async unlink(project: string, record: string): Promise<void> {
    await call(rp(project, "unlink"), { record });
  },
  async remove(project: string, record: string): Promise<void> {
    await call(rp(project, "delete"), { record });
  },
  async undelete(project: string, record: string): Promise<void> {
    await call(rp(project, "undelete"), { record });
  },
  async setChannels(project: string, record: string, channels: string[], enabled: boolean): Promise<void> {
    await call(rp(project, "channels/set"), { record, channels, enabled });
  },
  /** Full text (`q`, +/- terms) and/or a filter (docs/filter.md) in one language. */
  async search(
    project: string,
    s: { language: string; q?: string; filter?: unknown; top?: number; size?: number },
  ): Promise<RecordsPage> {
    const body: Record<string, unknown> = { language: s.language, "page.top": s.top ?? 0, "page.size": s.size ?? 50 };
    if (s.q?.trim()) body.q = s.q.trim();
    if (s.filter !== undefined && s.filter !== null) body.filter = s.filter;
    const env = await call(rp(project, "search"), body);
    return { items: inOrder(env.result.records, recordMap(env.data)), total: env.result["records.size"] ?? 0 };
  },
  /** Starts a background operation over a selection; answers the job's token. */
  async bulk(project: string, op: BulkOp, selection: Selection, extra: Record<string, unknown> = {}): Promise<string> {
    return (await call(rp(project, `bulk/${op}`), { selection, ...extra })).result["job.token"];
  },
  /** What a finished bulk job did: records done and skipped (with reasons), values refused. */
  async bulkOutcome(
    project: string,
    tokenOfJob: string,
  ): Promise<{ done: number; skipped: { gid: string; reason: string }[]; refused: number }> {
    const info = obj((await call(p(project, "jobs/get"), { token: tokenOfJob })).result.job?.info);
    return {
      done: info.done ?? 0,
      skipped: Array.isArray(info.skipped_items) ? info.skipped_items : [],
      refused: info.validation_errors ?? 0,
    };
  },
  /**
   * A workbook of a parent's children in one language (only those in `selection` when given: the
   * grid's selection): the file, or a download link for large ones.
   */
  async excelExport(
    project: string,
    record: string,
    language: string,
    selection?: Selection,
  ): Promise<{ name: string; file: Blob | null; url: string | null; rows: number }> {
    const env = await call(p(project, "records/excel/children"), {
      record,
      language,
      ...(selection?.length ? { selection } : {}),
    });
    const name = String(env.result["children.excel"] ?? "children.xlsx");
    return {
      name,
      file: fileOf(env.data, name),
      url: env.result["download.url"] ?? null,
      rows: env.result["children.size"] ?? 0,
    };
  },
  /** Imports an edited workbook; answers the counts, the value report and the marked-up workbook. */
  async excelImport(project: string, file: File, record?: string): Promise<ExcelResult> {
    const form = new FormData();
    form.append("upload_file", file, file.name);
    if (record) form.append("record", record);
    const env = await upload(p(project, "records/excel/update"), form);
    const name = String(env.result["report.excel"] ?? "report.xlsx");
    return {
      name,
      file: fileOf(env.data, name) ?? new Blob([], { type: XLSX }),
      counts: obj(env.result["report.counts"]),
      report: report(env.result),
    };
  },
};

/** The schema as the records pages read it (the schema pages have their own calls). */
async function schemaGet<T>(
  project: string,
  kind: "definition" | "class" | "field" | "layout",
  gids: string[],
  fn: (v: any) => T,
): Promise<Map<string, T>> {
  const plural = kind === "class" ? "classes" : `${kind}s`;
  return gids.length
    ? mapOf((await call(p(project, `${plural}/get`), { [plural]: gids })).data, plural, fn)
    : new Map();
}

export const recordSchemaApi = {
  definitions: (project: string, gids: string[]) => schemaGet(project, "definition", gids, toDefinition),
  classes: (project: string, gids: string[]) => schemaGet(project, "class", gids, toClass),
  fields: (project: string, gids: string[]) => schemaGet(project, "field", gids, toField),
  layouts: (project: string, gids: string[]) => schemaGet(project, "layout", gids, toLayout),
  /** The committed definitions (for the definition picker) and fields (for the bulk field update), by name. */
  async committed(project: string): Promise<{ definitions: DefinitionDef[]; fields: FieldDef[] }> {
    const filter = [
      "and",
      "",
      [
        ["kind", "in", ["definition", "field"]],
        ["is_committed", "is_true"],
      ],
    ];
    const env = await call(p(project, "schema/search"), { filter, "page.size": 5000 });
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    return {
      definitions: [...mapOf(env.data, "definitions", toDefinition).values()].filter((d) => !d.isExtended).sort(byName),
      fields: [...mapOf(env.data, "fields", toField).values()].sort(byName),
    };
  },
};
