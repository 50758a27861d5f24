import { Elysia, t } from "elysia";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import type { Ctx } from "../../platform/context";
import * as C from "./classes.service";
import * as D from "./definitions.service";
import * as F from "./fields.service";
import * as L from "./layouts.service";
import { bulkGet, startSchemaBulk } from "./schema.bulk";
import { searchSchema } from "./schema.search";

// The route template of src/features/apikeys/apikeys.routes.ts: schemas at the top, then one chain
// where every endpoint is its path, one service call wrapped by `answer`, and its options. Members
// the services check themselves (labels, options, metadata, initial values: every wrong value is
// listed in one 1001 report) are `loose` here.

const fieldTags = ["schema: fields"];
const classTags = ["schema: classes"];
const definitionTags = ["schema: definitions"];
const layoutTags = ["schema: layouts"];
const searchTags = ["schema: search and bulk"];

const params = t.Object({ project: t.String() });
const gid = t.String({ minLength: 1 });
const opt = t.Optional;
const loose = t.Optional(t.Unknown());
const one = <K extends string>(member: K) => t.Object({ [member]: gid } as Record<K, typeof gid>);

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
const classMembers = { name: opt(t.String()), label: loose, fields: opt(t.Array(t.String())), layout: opt(t.String()), metadata: loose };
const classField = t.Object({ class: gid, field: gid, before_field: opt(t.String()) });
const layoutMembers = { name: opt(t.String()), root: opt(t.String()), components: opt(t.Record(t.String(), t.Unknown())) };
const componentCreate = { parent: t.String(), type: t.String(), name: opt(t.Nullable(t.String())), options: opt(t.Record(t.String(), t.Unknown())), before_component: opt(t.String()) };
const componentModify = { component: t.String(), type: opt(t.String()), name: opt(t.Nullable(t.String())), options: opt(t.Record(t.String(), t.Unknown())) };
const definitionMembers = {
  name: opt(t.String()),
  label: loose,
  classes: opt(t.Array(t.String())),
  fields: opt(t.Array(t.String())),
  titlefield: opt(t.Nullable(t.String())),
  layout: opt(t.String()),
  childdefinitions: opt(t.Array(t.String())),
  metadata: loose,
};
const definitionClass = t.Object({ definition: gid, class: gid, before_class: opt(t.String()) });
const definitionField = t.Object({ definition: gid, field: gid, before_field: opt(t.String()) });
const childDefinition = t.Object({ definition: gid, childdefinition: gid, before_childdefinition: opt(t.String()) });
const fieldlistField = t.Object({ definition: gid, fieldlist: t.String(), field: gid, before_field: opt(t.String()) });
const selection = t.Array(t.Unknown());
const bulkBody = t.Object({ selection });

/**
 * The schema endpoints under `/api/p/<project>/` (docs/schema.md): fields, classes, definitions,
 * layouts/get, schema/search and schema/bulk. Owners, members and API users alike.
 */
export function schemaRoutes(ctx: Ctx) {
  return new Elysia({ prefix: "/api/p/:project" })
    .use(authMacro(ctx))
    .post("/fields/get", ({ params, body, actor }) => answer(F.getFields(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ field: opt(t.String()), fields: opt(t.Array(t.String())) }),
      detail: { summary: "One field (`field`) or several (`fields`)", tags: fieldTags },
    })
    .post("/fields/create", ({ params, body, actor }) => answer(F.createField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(fieldMembers),
      detail: { summary: "Create a field (new until committed); every member optional", tags: fieldTags },
    })
    .post("/fields/modify", ({ params, body, actor }) => answer(F.modifyField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ field: gid, ...fieldMembers }),
      detail: { summary: "Modify a field through its working copy", tags: fieldTags },
    })
    .post("/fields/commit", ({ params, body, actor }) => answer(F.commitField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ field: gid, dry_run: opt(t.Boolean()) }),
      detail: { summary: "Commit a field's working copy (or a new field); `dry_run: true` only reports what would change", tags: fieldTags },
    })
    .post("/fields/revert", ({ params, body, actor }) => answer(F.revertField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("field"),
      detail: { summary: "Drop a field's working copy (a new field is removed)", tags: fieldTags },
    })
    .post("/fields/save_as_new", ({ params, body, actor }) => answer(F.saveAsNewField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("field"),
      detail: { summary: "Save a field's working copy as a field of its own", tags: fieldTags },
    })
    .post("/fields/copy", ({ params, body, actor }) => answer(F.copyField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("field"),
      detail: { summary: "Copy a committed field as a new field", tags: fieldTags },
    })
    .post("/fields/delete", ({ params, body, actor }) => answer(F.deleteField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("field"),
      detail: { summary: "Delete a field nobody uses", tags: fieldTags },
    })
    .post("/fields/metadata/set", ({ params, body, actor }) => answer(F.setFieldMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ field: gid, ...metadataSet }),
      detail: { summary: "Add or replace one metadata entry of a field", tags: fieldTags },
    })
    .post("/fields/metadata/clear", ({ params, body, actor }) => answer(F.clearFieldMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ field: gid, name: t.String() }),
      detail: { summary: "Remove one metadata entry of a field", tags: fieldTags },
    })
    .post("/classes/get", ({ params, body, actor }) => answer(C.getClasses(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ class: opt(t.String()), classes: opt(t.Array(t.String())) }),
      detail: { summary: "One class (`class`) or several (`classes`)", tags: classTags },
    })
    .post("/classes/create", ({ params, body, actor }) => answer(C.createClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(classMembers),
      detail: { summary: "Create a class with its layout (new until committed)", tags: classTags },
    })
    .post("/classes/modify", ({ params, body, actor }) => answer(C.modifyClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ class: gid, ...classMembers }),
      detail: { summary: "Modify a class through its working copy", tags: classTags },
    })
    .post("/classes/commit", ({ params, body, actor }) => answer(C.commitClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ class: gid, dry_run: opt(t.Boolean()) }),
      detail: { summary: "Commit a class (and its layout); `dry_run: true` only reports", tags: classTags },
    })
    .post("/classes/revert", ({ params, body, actor }) => answer(C.revertClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("class"),
      detail: { summary: "Drop a class's working copy (a new class is removed)", tags: classTags },
    })
    .post("/classes/save_as_new", ({ params, body, actor }) => answer(C.saveAsNewClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("class"),
      detail: { summary: "Save a class's working copy as a class of its own", tags: classTags },
    })
    .post("/classes/copy", ({ params, body, actor }) => answer(C.copyClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("class"),
      detail: { summary: "Copy a committed class (and its layout) as a new class", tags: classTags },
    })
    .post("/classes/delete", ({ params, body, actor }) => answer(C.deleteClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("class"),
      detail: { summary: "Delete a class nobody uses", tags: classTags },
    })
    .post("/classes/fields/add", ({ params, body, actor }) => answer(C.addClassField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: classField,
      detail: { summary: "Add a committed field to a class", tags: classTags },
    })
    .post("/classes/fields/move", ({ params, body, actor }) => answer(C.moveClassField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: classField,
      detail: { summary: "Move a field inside a class", tags: classTags },
    })
    .post("/classes/fields/remove", ({ params, body, actor }) => answer(C.removeClassField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ class: gid, field: gid }),
      detail: { summary: "Remove a field from a class", tags: classTags },
    })
    .post("/classes/metadata/set", ({ params, body, actor }) => answer(C.setClassMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ class: gid, ...metadataSet }),
      detail: { summary: "Add or replace one metadata entry of a class", tags: classTags },
    })
    .post("/classes/metadata/clear", ({ params, body, actor }) => answer(C.clearClassMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ class: gid, name: t.String() }),
      detail: { summary: "Remove one metadata entry of a class", tags: classTags },
    })
    .post("/classes/layouts/modify", ({ params, body, actor }) => answer(L.modifyLayout(ctx, actor, params.project, "class", body.class, body)), {
      auth: true,
      params,
      body: t.Object({ class: gid, ...layoutMembers }),
      detail: { summary: "Modify a class's layout (name, root, components)", tags: classTags },
    })
    .post("/classes/layouts/components/create", ({ params, body, actor }) => answer(L.createComponent(ctx, actor, params.project, "class", body.class, body)), {
      auth: true,
      params,
      body: t.Object({ class: gid, ...componentCreate }),
      detail: { summary: "Add a component to a class's layout", tags: classTags },
    })
    .post("/classes/layouts/components/modify", ({ params, body, actor }) => answer(L.modifyComponent(ctx, actor, params.project, "class", body.class, body)), {
      auth: true,
      params,
      body: t.Object({ class: gid, ...componentModify }),
      detail: { summary: "Modify a component of a class's layout", tags: classTags },
    })
    .post("/classes/layouts/components/delete", ({ params, body, actor }) => answer(L.deleteComponent(ctx, actor, params.project, "class", body.class, body)), {
      auth: true,
      params,
      body: t.Object({ class: gid, component: t.String() }),
      detail: { summary: "Delete a component (and its content) from a class's layout", tags: classTags },
    })
    .post("/definitions/get", ({ params, body, actor }) => answer(D.getDefinitions(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ definition: opt(t.String()), definitions: opt(t.Array(t.String())) }),
      detail: { summary: "One definition (`definition`) or several (`definitions`)", tags: definitionTags },
    })
    .post("/definitions/create", ({ params, body, actor }) => answer(D.createDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(definitionMembers),
      detail: { summary: "Create a definition with its layout (new until committed)", tags: definitionTags },
    })
    .post("/definitions/modify", ({ params, body, actor }) => answer(D.modifyDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, ...definitionMembers }),
      detail: { summary: "Modify a definition through its working copy", tags: definitionTags },
    })
    .post("/definitions/commit", ({ params, body, actor }) => answer(D.commitDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, dry_run: opt(t.Boolean()) }),
      detail: { summary: "Commit a definition (and its layout); `dry_run: true` only reports", tags: definitionTags },
    })
    .post("/definitions/revert", ({ params, body, actor }) => answer(D.revertDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("definition"),
      detail: { summary: "Drop a definition's working copy (a new definition is removed)", tags: definitionTags },
    })
    .post("/definitions/save_as_new", ({ params, body, actor }) => answer(D.saveAsNewDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("definition"),
      detail: { summary: "Save a definition's working copy as a definition of its own", tags: definitionTags },
    })
    .post("/definitions/copy", ({ params, body, actor }) => answer(D.copyDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("definition"),
      detail: { summary: "Copy a committed definition (and its layout) as a new definition", tags: definitionTags },
    })
    .post("/definitions/delete", ({ params, body, actor }) => answer(D.deleteDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: one("definition"),
      detail: { summary: "Delete a definition nobody uses", tags: definitionTags },
    })
    .post("/definitions/classes/add", ({ params, body, actor }) => answer(D.addDefinitionClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: definitionClass,
      detail: { summary: "Add a committed class to a definition", tags: definitionTags },
    })
    .post("/definitions/classes/move", ({ params, body, actor }) => answer(D.moveDefinitionClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: definitionClass,
      detail: { summary: "Move a class inside a definition", tags: definitionTags },
    })
    .post("/definitions/classes/remove", ({ params, body, actor }) => answer(D.removeDefinitionClass(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, class: gid }),
      detail: { summary: "Remove a class from a definition", tags: definitionTags },
    })
    .post("/definitions/fields/add", ({ params, body, actor }) => answer(D.addDefinitionField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: definitionField,
      detail: { summary: "Add a committed field to a definition", tags: definitionTags },
    })
    .post("/definitions/fields/move", ({ params, body, actor }) => answer(D.moveDefinitionField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: definitionField,
      detail: { summary: "Move a field inside a definition", tags: definitionTags },
    })
    .post("/definitions/fields/remove", ({ params, body, actor }) => answer(D.removeDefinitionField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, field: gid }),
      detail: { summary: "Remove a field from a definition", tags: definitionTags },
    })
    .post("/definitions/metadata/set", ({ params, body, actor }) => answer(D.setDefinitionMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, ...metadataSet }),
      detail: { summary: "Add or replace one metadata entry of a definition", tags: definitionTags },
    })
    .post("/definitions/metadata/clear", ({ params, body, actor }) => answer(D.clearDefinitionMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, name: t.String() }),
      detail: { summary: "Remove one metadata entry of a definition", tags: definitionTags },
    })
    .post("/definitions/fieldlists/fields/add", ({ params, body, actor }) => answer(D.addFieldlistField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: fieldlistField,
      detail: { summary: "Add one of the definition's fields to a fieldlist", tags: definitionTags },
    })
    .post("/definitions/fieldlists/fields/move", ({ params, body, actor }) => answer(D.moveFieldlistField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: fieldlistField,
      detail: { summary: "Move a field inside a definition's fieldlist", tags: definitionTags },
    })
    .post("/definitions/fieldlists/fields/remove", ({ params, body, actor }) => answer(D.removeFieldlistField(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, fieldlist: t.String(), field: gid }),
      detail: { summary: "Remove a field from a definition's fieldlist", tags: definitionTags },
    })
    .post("/definitions/childdefinitions/add", ({ params, body, actor }) => answer(D.addChildDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: childDefinition,
      detail: { summary: "Offer a committed definition for new children", tags: definitionTags },
    })
    .post("/definitions/childdefinitions/move", ({ params, body, actor }) => answer(D.moveChildDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: childDefinition,
      detail: { summary: "Move a child definition", tags: definitionTags },
    })
    .post("/definitions/childdefinitions/remove", ({ params, body, actor }) => answer(D.removeChildDefinition(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, childdefinition: gid }),
      detail: { summary: "Stop offering a child definition", tags: definitionTags },
    })
    .post("/definitions/layouts/modify", ({ params, body, actor }) => answer(L.modifyLayout(ctx, actor, params.project, "definition", body.definition, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, ...layoutMembers }),
      detail: { summary: "Modify a definition's layout (name, root, components)", tags: definitionTags },
    })
    .post("/definitions/layouts/components/create", ({ params, body, actor }) => answer(L.createComponent(ctx, actor, params.project, "definition", body.definition, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, ...componentCreate }),
      detail: { summary: "Add a component to a definition's layout", tags: definitionTags },
    })
    .post("/definitions/layouts/components/modify", ({ params, body, actor }) => answer(L.modifyComponent(ctx, actor, params.project, "definition", body.definition, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, ...componentModify }),
      detail: { summary: "Modify a component of a definition's layout", tags: definitionTags },
    })
    .post("/definitions/layouts/components/delete", ({ params, body, actor }) => answer(L.deleteComponent(ctx, actor, params.project, "definition", body.definition, body)), {
      auth: true,
      params,
      body: t.Object({ definition: gid, component: t.String() }),
      detail: { summary: "Delete a component (and its content) from a definition's layout", tags: definitionTags },
    })
    .post("/layouts/get", ({ params, body, actor }) => answer(L.getLayouts(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ layout: opt(t.String()), layouts: opt(t.Array(t.String())) }),
      detail: { summary: "One layout (`layout`) or several (`layouts`)", tags: layoutTags },
    })
    .post("/schema/search", ({ params, body, actor }) => answer(searchSchema(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ language: opt(t.String()), q: opt(t.String()), filter: loose, "page.top": opt(t.Integer({ minimum: 0 })), "page.size": opt(t.Integer({ minimum: 0 })) }),
      detail: { summary: "Search definitions, classes and fields by `q` (name, label, field type) and/or `filter` (the shared filter language)", tags: searchTags },
    })
    .post("/schema/bulk/get", ({ params, body, actor }) => answer(bulkGet(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ selection, "page.size": opt(t.Integer()), "page.cursor": opt(t.Nullable(t.String())) }),
      detail: { summary: "One page of a selection of schema items (gids and search elements)", tags: searchTags },
    })
    .post("/schema/bulk/commit", ({ params, body, actor }) => answer(startSchemaBulk(ctx, actor, params.project, "commit", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Commit every selected schema item, as a job (answers job.token)", tags: searchTags },
    })
    .post("/schema/bulk/revert", ({ params, body, actor }) => answer(startSchemaBulk(ctx, actor, params.project, "revert", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Revert every selected schema item, as a job (answers job.token)", tags: searchTags },
    })
    .post("/schema/bulk/save_as_new", ({ params, body, actor }) => answer(startSchemaBulk(ctx, actor, params.project, "save_as_new", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Save as new every selected schema item, as a job (answers job.token)", tags: searchTags },
    })
    .post("/schema/bulk/copy", ({ params, body, actor }) => answer(startSchemaBulk(ctx, actor, params.project, "copy", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Copy every selected schema item, as a job (answers job.token)", tags: searchTags },
    })
    .post("/schema/bulk/delete", ({ params, body, actor }) => answer(startSchemaBulk(ctx, actor, params.project, "delete", body)), {
      auth: true,
      params,
      body: bulkBody,
      detail: { summary: "Delete every selected schema item, as a job (answers job.token)", tags: searchTags },
    });
}
