import { type Envelope, call, p } from "./http";
import { entries } from "./views";

// ---------------------------------------------------------------------------------------------
// Schema: fields, classes, definitions, layouts (docs/schema.md). Kept in this one section so the
// schema pages (pages/schema/) have a single place to change when a shape changes.

export type SchemaKind = "field" | "class" | "definition";
export const SCHEMA_KINDS: SchemaKind[] = ["field", "class", "definition"];
/** The wire's plural of a kind: endpoint prefix, `data` dictionary and sync data type. */
export const schemaPlural = (k: SchemaKind | "layout") => (k === "class" ? "classes" : `${k}s`);

/** A text per project language. */
export type Localized = Record<string, string>;

type SchemaBase = {
  gid: string;
  /** The committed item a working copy edits (null otherwise). */
  original: string | null;
  name: string;
  label: Localized;
  isNew: boolean;
  isWorkingCopy: boolean;
  updatedOn: number;
};

export type SchemaField = SchemaBase & {
  kind: "field";
  type: string;
  options: Record<string, unknown>;
  isLocalized: boolean;
  isRequired: boolean;
  initial: Record<string, unknown>;
  unit: string | null;
};

export type SchemaClass = SchemaBase & { kind: "class"; fields: string[]; layout: string | null };

export type SchemaDefinition = SchemaBase & {
  kind: "definition";
  classes: string[];
  fields: string[];
  titlefield: string | null;
  layout: string | null;
  childdefinitions: string[];
  fieldlists: Record<string, string[]>;
};

export type SchemaItem = SchemaField | SchemaClass | SchemaDefinition;

export type LayoutComponent = { type: string; name?: string; options?: Record<string, unknown>; content?: string[] };
export type SchemaLayout = {
  gid: string;
  original: string | null;
  name: string;
  root: string;
  components: Record<string, LayoutComponent>;
  updatedOn: number;
};

export type Schema = {
  fields: Map<string, SchemaField>;
  classes: Map<string, SchemaClass>;
  definitions: Map<string, SchemaDefinition>;
  layouts: Map<string, SchemaLayout>;
};

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
export const BARCODE_FORMATS = ["any", "ean8", "ean13", "upca", "gtin14"] as const;
export const LAYOUT_CONTAINERS = ["vertical", "horizontal", "tabs", "tab", "section"] as const;

/** What a commit would do (its dry run). */
export type CommitPreview = {
  changedMembers: string[];
  /** Classes and definitions that follow the commit. */
  classes: string[];
  definitions: string[];
  /** Per definition, the fields its ordered list would lose. */
  droppedFields: Record<string, string[]>;
  /** Records touched, and how many would lose values (when the records feature reports it). */
  records: { affected: number; losingValues: number } | null;
};

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
const localized = (v: unknown): Localized => Object.fromEntries(entries(v).filter(([, t]) => typeof t === "string"));
const dict = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

function schemaBase(x: any): SchemaBase {
  return {
    gid: x.gid,
    original: x.original ?? null,
    name: x.name ?? "",
    label: localized(x.label),
    isNew: !!x.is_new,
    isWorkingCopy: !!x.is_working_copy,
    updatedOn: typeof x.updated_on === "number" ? x.updated_on : 0,
  };
}

function toSchemaField(x: any): SchemaField {
  return {
    ...schemaBase(x),
    kind: "field",
    type: x.type,
    options: dict(x.options),
    isLocalized: !!x.is_localized,
    isRequired: !!x.is_required,
    initial: dict(x.initial),
    unit: typeof x.unit === "string" ? x.unit : null,
  };
}

function toSchemaClass(x: any): SchemaClass {
  return { ...schemaBase(x), kind: "class", fields: strings(x.fields), layout: x.layout ?? null };
}

function toSchemaDefinition(x: any): SchemaDefinition {
  return {
    ...schemaBase(x),
    kind: "definition",
    classes: strings(x.classes),
    fields: strings(x.fields),
    titlefield: x.titlefield ?? null,
    layout: x.layout ?? null,
    childdefinitions: strings(x.childdefinitions),
    fieldlists: Object.fromEntries(entries(x.fieldlists).map(([k, v]) => [k, strings(v)])),
  };
}

function toSchemaLayout(x: any): SchemaLayout {
  const components: Record<string, LayoutComponent> = {};
  for (const [k, c] of entries(x.components)) {
    if (!c || typeof c !== "object") continue;
    components[k] = {
      type: String(c.type),
      name: typeof c.name === "string" ? c.name : undefined,
      options: c.options ? dict(c.options) : undefined,
      content: Array.isArray(c.content) ? strings(c.content) : undefined,
    };
  }
  return {
    gid: x.gid,
    original: x.original ?? null,
    name: x.name ?? "",
    root: x.root,
    components,
    updatedOn: typeof x.updated_on === "number" ? x.updated_on : 0,
  };
}

/** The schema items an answer's `data` holds (dictionaries it lacks are empty). */
export function schemaOf(data: any): Schema {
  return {
    fields: new Map(entries(data?.fields).map(([k, v]) => [k, toSchemaField(v)])),
    classes: new Map(entries(data?.classes).map(([k, v]) => [k, toSchemaClass(v)])),
    definitions: new Map(entries(data?.definitions).map(([k, v]) => [k, toSchemaDefinition(v)])),
    layouts: new Map(entries(data?.layouts).map(([k, v]) => [k, toSchemaLayout(v)])),
  };
}

/** The answer of a schema change: the gid it names and the items it returned. */
export type SchemaAnswer = { gid: string | null; data: Schema; jobs: string[] };

const schemaAnswer = (env: Envelope, kind: SchemaKind): SchemaAnswer => ({
  gid: env.result[kind] ?? null,
  data: schemaOf(env.data),
  jobs: strings(env.result["job.tokens"]),
});

/** The members a class or definition lists and moves one by one. */
export type SchemaMember = "fields" | "classes" | "childdefinitions";
const MEMBER_KEY: Record<SchemaMember, string> = {
  fields: "field",
  classes: "class",
  childdefinitions: "childdefinition",
};

export const schemaApi = {
  /** Every schema item of the project (the project init answers all four dictionaries). */
  async load(project: string): Promise<Schema> {
    return schemaOf((await call(`/api/p/${project}/init`)).data);
  },
  /** Some items again (after sync items named them); gids that are gone are left out. */
  async get(project: string, kind: SchemaKind | "layout", gids: string[]): Promise<Schema> {
    return schemaOf((await call(p(project, `${schemaPlural(kind)}/get`), { [schemaPlural(kind)]: gids })).data);
  },
  /** `create`/`modify` with wire members (name, label, type, options, is_localized, ...). */
  async create(project: string, kind: SchemaKind, members: Record<string, unknown>): Promise<SchemaAnswer> {
    return schemaAnswer(await call(p(project, `${schemaPlural(kind)}/create`), members), kind);
  },
  async modify(
    project: string,
    kind: SchemaKind,
    gid: string,
    members: Record<string, unknown>,
  ): Promise<SchemaAnswer> {
    return schemaAnswer(await call(p(project, `${schemaPlural(kind)}/modify`), { ...members, [kind]: gid }), kind);
  },
  /** commit, revert, save_as_new, copy, delete: the working-copy life cycle. */
  async lifecycle(
    project: string,
    kind: SchemaKind,
    gid: string,
    action: "commit" | "revert" | "save_as_new" | "copy" | "delete",
  ): Promise<SchemaAnswer> {
    return schemaAnswer(await call(p(project, `${schemaPlural(kind)}/${action}`), { [kind]: gid }), kind);
  },
  /** What a commit would change and drop; nothing is changed. */
  async commitPreview(project: string, kind: SchemaKind, gid: string): Promise<CommitPreview> {
    const r = (await call(p(project, `${schemaPlural(kind)}/commit`), { [kind]: gid, dry_run: true })).result;
    const drop = dict(r.would_drop);
    const records = dict(drop.records);
    return {
      changedMembers: strings(r.changed_members),
      classes: strings(r.classes),
      definitions: strings(r.definitions),
      droppedFields: Object.fromEntries(entries(drop.fields).map(([k, v]) => [k, strings(v)])),
      records:
        typeof records.affected === "number"
          ? {
              affected: records.affected,
              losingValues: typeof records.losing_values === "number" ? records.losing_values : 0,
            }
          : null,
    };
  },
  /** Adds, moves (before another, or to the end) or removes one entry of a class's or definition's list. */
  async member(
    project: string,
    kind: "class" | "definition",
    gid: string,
    member: SchemaMember,
    action: "add" | "move" | "remove",
    item: string,
    before?: string | null,
  ): Promise<SchemaAnswer> {
    const key = MEMBER_KEY[member];
    const body: Record<string, unknown> = { [kind]: gid, [key]: item };
    if (before && action !== "remove") body[`before_${key}`] = before;
    return schemaAnswer(await call(p(project, `${schemaPlural(kind)}/${member}/${action}`), body), kind);
  },
  /** Adds, moves or removes one of a definition's fields in one of the project's fieldlists. */
  async fieldlistMember(
    project: string,
    definition: string,
    fieldlist: string,
    action: "add" | "move" | "remove",
    field: string,
    before?: string | null,
  ): Promise<SchemaAnswer> {
    const body: Record<string, unknown> = { definition, fieldlist, field };
    if (before && action !== "remove") body.before_field = before;
    return schemaAnswer(await call(p(project, `definitions/fieldlists/fields/${action}`), body), "definition");
  },
  /** Replaces a layout's root and components (moves are done this way). */
  async setLayout(
    project: string,
    kind: "class" | "definition",
    gid: string,
    root: string,
    components: Record<string, LayoutComponent>,
  ): Promise<SchemaAnswer> {
    return schemaAnswer(
      await call(p(project, `${schemaPlural(kind)}/layouts/modify`), { [kind]: gid, root, components }),
      kind,
    );
  },
  async addComponent(
    project: string,
    kind: "class" | "definition",
    gid: string,
    c: { parent: string; type: string; name?: string; options?: Record<string, unknown>; before?: string },
  ): Promise<SchemaAnswer & { component: string }> {
    const body: Record<string, unknown> = { [kind]: gid, parent: c.parent, type: c.type };
    if (c.name) body.name = c.name;
    if (c.options) body.options = c.options;
    if (c.before) body.before_component = c.before;
    const env = await call(p(project, `${schemaPlural(kind)}/layouts/components/create`), body);
    return { ...schemaAnswer(env, kind), component: env.result.component };
  },
  async modifyComponent(
    project: string,
    kind: "class" | "definition",
    gid: string,
    component: string,
    changes: { name?: string | null; type?: string; options?: Record<string, unknown> },
  ): Promise<SchemaAnswer> {
    return schemaAnswer(
      await call(p(project, `${schemaPlural(kind)}/layouts/components/modify`), { [kind]: gid, component, ...changes }),
      kind,
    );
  },
  async removeComponent(
    project: string,
    kind: "class" | "definition",
    gid: string,
    component: string,
  ): Promise<SchemaAnswer> {
    return schemaAnswer(
      await call(p(project, `${schemaPlural(kind)}/layouts/components/delete`), { [kind]: gid, component }),
      kind,
    );
  },
};
