import { Elysia, t, type TSchema } from "elysia";
import type { Ctx } from "../../context";
import { authMacro, type Caller } from "../../http/auth";
import { ok } from "../../http/envelope";
import type { Actor } from "./schema.core";
import * as C from "./classes.service";
import * as D from "./definitions.service";
import * as F from "./fields.service";
import * as L from "./layouts.service";
import { BULK_OPS, bulkGet, startSchemaBulk } from "./schema.bulk";
import { searchSchema } from "./schema.search";
import { registerSchemaDictionaries } from "./schema.dictionaries";

const params = t.Object({ project: t.String() });
const gid = t.String({ minLength: 1 });
const opt = t.Optional;
const loose = t.Optional(t.Unknown());

/** The actor of a request: who is asking, for the services' own access checks. */
export const actorOf = (caller: Caller): Actor => ({ userGid: caller.user.gid, kind: caller.user.kind === "api" ? "api" : "person" });

type Answer = { result: Record<string, unknown>; data: Record<string, unknown> };
type Service<B> = (ctx: Ctx, actor: Actor, projectGid: string, body: B) => Answer;

const fieldMembers = {
  name: opt(t.String()),
  type: opt(t.String()),
  is_localized: loose,
  is_required: loose,
  unit: loose,
  options: loose,
  label: loose,
  initial: loose,
  metadata: loose,
};
const metadataSet = { name: t.String(), type: opt(t.String()), is_localized: loose, value: loose };

/**
 * The schema endpoints under `/api/p/<project>/`: fields, classes, definitions, layouts/get,
 * schema/search and schema/bulk. Each route checks the body's shape and calls one service.
 */
export function schemaRoutes(ctx: Ctx) {
  registerSchemaDictionaries();
  const app = new Elysia({ prefix: "/api/p/:project" }).use(authMacro(ctx));
  /** One POST route: body schema, summary, one service call answered in the envelope. */
  const route = <S extends TSchema>(path: string, tag: string, summary: string, body: S, service: Service<any>) =>
    app.post(path, ({ params, body, caller }: any) => {
      const r = service(ctx, actorOf(caller), params.project, body ?? {});
      return ok(r.result, r.data);
    }, { auth: true, params, body, detail: { summary, tags: [tag] } } as any);

  const one = (member: string) => t.Object({ [member]: gid });
  const f = "schema: fields";
  route("/fields/get", f, "One field (`field`) or several (`fields`)", t.Object({ field: opt(t.String()), fields: opt(t.Array(t.String())) }), F.getFields);
  route("/fields/create", f, "Create a field (new until committed); every member optional", t.Object(fieldMembers), F.createField);
  route("/fields/modify", f, "Modify a field through its working copy", t.Object({ field: gid, ...fieldMembers }), F.modifyField);
  route("/fields/commit", f, "Commit a field's working copy (or a new field); `dry_run: true` only reports what would change", t.Object({ field: gid, dry_run: opt(t.Boolean()) }), F.commitField);
  route("/fields/revert", f, "Drop a field's working copy (a new field is removed)", one("field"), F.revertField);
  route("/fields/save_as_new", f, "Save a field's working copy as a field of its own", one("field"), F.saveAsNewField);
  route("/fields/copy", f, "Copy a committed field as a new field", one("field"), F.copyField);
  route("/fields/delete", f, "Delete a field nobody uses", one("field"), F.deleteField);
  route("/fields/metadata/set", f, "Add or replace one metadata entry of a field", t.Object({ field: gid, ...metadataSet }), F.setFieldMetadata);
  route("/fields/metadata/clear", f, "Remove one metadata entry of a field", t.Object({ field: gid, name: t.String() }), F.clearFieldMetadata);
  const c = "schema: classes";
  const classMembers = { name: opt(t.String()), label: loose, fields: opt(t.Array(t.String())), layout: opt(t.String()), metadata: loose };
  const classField = t.Object({ class: gid, field: gid, before_field: opt(t.String()) });
  route("/classes/get", c, "One class (`class`) or several (`classes`)", t.Object({ class: opt(t.String()), classes: opt(t.Array(t.String())) }), C.getClasses);
  route("/classes/create", c, "Create a class with its layout (new until committed)", t.Object(classMembers), C.createClass);
  route("/classes/modify", c, "Modify a class through its working copy", t.Object({ class: gid, ...classMembers }), C.modifyClass);
  route("/classes/commit", c, "Commit a class (and its layout); `dry_run: true` only reports", t.Object({ class: gid, dry_run: opt(t.Boolean()) }), C.commitClass);
  route("/classes/revert", c, "Drop a class's working copy (a new class is removed)", one("class"), C.revertClass);
  route("/classes/save_as_new", c, "Save a class's working copy as a class of its own", one("class"), C.saveAsNewClass);
  route("/classes/copy", c, "Copy a committed class (and its layout) as a new class", one("class"), C.copyClass);
  route("/classes/delete", c, "Delete a class nobody uses", one("class"), C.deleteClass);
  route("/classes/fields/add", c, "Add a committed field to a class", classField, C.addClassField);
  route("/classes/fields/move", c, "Move a field inside a class", classField, C.moveClassField);
  route("/classes/fields/remove", c, "Remove a field from a class", t.Object({ class: gid, field: gid }), C.removeClassField);
  route("/classes/metadata/set", c, "Add or replace one metadata entry of a class", t.Object({ class: gid, ...metadataSet }), C.setClassMetadata);
  route("/classes/metadata/clear", c, "Remove one metadata entry of a class", t.Object({ class: gid, name: t.String() }), C.clearClassMetadata);
  const layoutMembers = { name: opt(t.String()), root: opt(t.String()), components: opt(t.Record(t.String(), t.Unknown())) };
  const componentCreate = { parent: t.String(), type: t.String(), name: opt(t.Nullable(t.String())), options: opt(t.Record(t.String(), t.Unknown())), before_component: opt(t.String()) };
  const componentModify = { component: t.String(), type: opt(t.String()), name: opt(t.Nullable(t.String())), options: opt(t.Record(t.String(), t.Unknown())) };
  const forOwner = (kind: "class" | "definition", fn: (ctx: Ctx, a: Actor, p: string, k: "class" | "definition", g: string, i: any) => Answer): Service<any> =>
    (ctx, a, p, body) => fn(ctx, a, p, kind, body[kind], body);
  route("/classes/layouts/modify", c, "Modify a class's layout (name, root, components)", t.Object({ class: gid, ...layoutMembers }), forOwner("class", L.modifyLayout));
  route("/classes/layouts/components/create", c, "Add a component to a class's layout", t.Object({ class: gid, ...componentCreate }), forOwner("class", L.createComponent));
  route("/classes/layouts/components/modify", c, "Modify a component of a class's layout", t.Object({ class: gid, ...componentModify }), forOwner("class", L.modifyComponent));
  route("/classes/layouts/components/delete", c, "Delete a component (and its content) from a class's layout", t.Object({ class: gid, component: t.String() }), forOwner("class", L.deleteComponent));

  const d = "schema: definitions";
  const defMembers = {
    name: opt(t.String()),
    label: loose,
    classes: opt(t.Array(t.String())),
    fields: opt(t.Array(t.String())),
    titlefield: opt(t.Nullable(t.String())),
    layout: opt(t.String()),
    childdefinitions: opt(t.Array(t.String())),
    metadata: loose,
  };
  const defClass = t.Object({ definition: gid, class: gid, before_class: opt(t.String()) });
  const defField = t.Object({ definition: gid, field: gid, before_field: opt(t.String()) });
  const defChild = t.Object({ definition: gid, childdefinition: gid, before_childdefinition: opt(t.String()) });
  const defList = t.Object({ definition: gid, fieldlist: t.String(), field: gid, before_field: opt(t.String()) });
  route("/definitions/get", d, "One definition (`definition`) or several (`definitions`)", t.Object({ definition: opt(t.String()), definitions: opt(t.Array(t.String())) }), D.getDefinitions);
  route("/definitions/create", d, "Create a definition with its layout (new until committed)", t.Object(defMembers), D.createDefinition);
  route("/definitions/modify", d, "Modify a definition through its working copy", t.Object({ definition: gid, ...defMembers }), D.modifyDefinition);
  route("/definitions/commit", d, "Commit a definition (and its layout); `dry_run: true` only reports", t.Object({ definition: gid, dry_run: opt(t.Boolean()) }), D.commitDefinition);
  route("/definitions/revert", d, "Drop a definition's working copy (a new definition is removed)", one("definition"), D.revertDefinition);
  route("/definitions/save_as_new", d, "Save a definition's working copy as a definition of its own", one("definition"), D.saveAsNewDefinition);
  route("/definitions/copy", d, "Copy a committed definition (and its layout) as a new definition", one("definition"), D.copyDefinition);
  route("/definitions/delete", d, "Delete a definition nobody uses", one("definition"), D.deleteDefinition);
  route("/definitions/classes/add", d, "Add a committed class to a definition", defClass, D.addDefinitionClass);
  route("/definitions/classes/move", d, "Move a class inside a definition", defClass, D.moveDefinitionClass);
  route("/definitions/classes/remove", d, "Remove a class from a definition", t.Object({ definition: gid, class: gid }), D.removeDefinitionClass);
  route("/definitions/fields/add", d, "Add a committed field to a definition", defField, D.addDefinitionField);
  route("/definitions/fields/move", d, "Move a field inside a definition", defField, D.moveDefinitionField);
  route("/definitions/fields/remove", d, "Remove a field from a definition", t.Object({ definition: gid, field: gid }), D.removeDefinitionField);
  route("/definitions/metadata/set", d, "Add or replace one metadata entry of a definition", t.Object({ definition: gid, ...metadataSet }), D.setDefinitionMetadata);
  route("/definitions/metadata/clear", d, "Remove one metadata entry of a definition", t.Object({ definition: gid, name: t.String() }), D.clearDefinitionMetadata);
  route("/definitions/fieldlists/fields/add", d, "Add one of the definition's fields to a fieldlist", defList, D.addFieldlistField);
  route("/definitions/fieldlists/fields/move", d, "Move a field inside a definition's fieldlist", defList, D.moveFieldlistField);
  route("/definitions/fieldlists/fields/remove", d, "Remove a field from a definition's fieldlist", t.Object({ definition: gid, fieldlist: t.String(), field: gid }), D.removeFieldlistField);
  route("/definitions/childdefinitions/add", d, "Offer a committed definition for new children", defChild, D.addChildDefinition);
  route("/definitions/childdefinitions/move", d, "Move a child definition", defChild, D.moveChildDefinition);
  route("/definitions/childdefinitions/remove", d, "Stop offering a child definition", t.Object({ definition: gid, childdefinition: gid }), D.removeChildDefinition);
  route("/definitions/layouts/modify", d, "Modify a definition's layout (name, root, components)", t.Object({ definition: gid, ...layoutMembers }), forOwner("definition", L.modifyLayout));
  route("/definitions/layouts/components/create", d, "Add a component to a definition's layout", t.Object({ definition: gid, ...componentCreate }), forOwner("definition", L.createComponent));
  route("/definitions/layouts/components/modify", d, "Modify a component of a definition's layout", t.Object({ definition: gid, ...componentModify }), forOwner("definition", L.modifyComponent));
  route("/definitions/layouts/components/delete", d, "Delete a component (and its content) from a definition's layout", t.Object({ definition: gid, component: t.String() }), forOwner("definition", L.deleteComponent));

  route("/layouts/get", "schema: layouts", "One layout (`layout`) or several (`layouts`)", t.Object({ layout: opt(t.String()), layouts: opt(t.Array(t.String())) }), L.getLayouts);
  const sc = "schema: search and bulk";
  route("/schema/search", sc, "Search definitions, classes and fields by `q` (name, label, field type) and/or `filter`", t.Object({ language: opt(t.String()), q: opt(t.String()), filter: loose, "page.top": opt(t.Integer({ minimum: 0 })), "page.size": opt(t.Integer({ minimum: 1 })) }), searchSchema);
  const selection = t.Array(t.Unknown());
  route("/schema/bulk/get", sc, "One page of a selection of schema items (gids and search elements)", t.Object({ selection, "page.size": opt(t.Integer()), "page.cursor": opt(t.Nullable(t.String())) }), bulkGet);
  for (const op of BULK_OPS)
    route(`/schema/bulk/${op}`, sc, `${op} every selected schema item, as a job (answers job.token)`, t.Object({ selection }), (ctx, a, p, body) => startSchemaBulk(ctx, a, p, op, body));
  return app;
}
