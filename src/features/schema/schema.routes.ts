import { t } from "elysia";
import { operation } from "../../http/operations";
import * as classService from "./classes.service";
import * as definitionService from "./definitions.service";
import * as fieldService from "./fields.service";
import * as layoutService from "./layouts.service";
import { bulkGet, startSchemaBulk } from "./schema.bulk";
import { searchSchema } from "./schema.search";

// The route template of src/features/apikeys/apikeys.routes.ts: schemas at the top, then one list
// where every endpoint is an operation: its path, body schema, one service call and its OpenAPI
// summary and tags (served as POST /api/p/<project>/<path> and runnable in a batch). A member of
// the wrong JSON type is a 400, as the reference says ("wrong type or value"): here, or for labels
// in the services (a Record schema here would read a string as an object of its characters).
// Members whose shape depends on the field type or the project (options, metadata, initial
// values, label languages) are `loose` and checked by the services, which list every wrong value
// in one 1001 report.

const fieldTags = ["schema: fields"];
const classTags = ["schema: classes"];
const definitionTags = ["schema: definitions"];
const layoutTags = ["schema: layouts"];
const searchTags = ["schema: search and bulk"];

const gid = t.String({ minLength: 1 });
const opt = t.Optional;
const loose = t.Optional(t.Unknown());
const one = <K extends string>(member: K) => t.Object({ [member]: gid } as Record<K, typeof gid>);

const fieldMembers = {
  name: opt(t.String()),
  type: opt(t.String()),
  is_localized: opt(t.Boolean()),
  is_required: opt(t.Boolean()),
  unit: opt(t.Nullable(t.String())),
  options: loose,
  label: loose,
  initial: loose,
  metadata: loose,
};
const metadataSet = { name: t.String(), type: opt(t.String()), is_localized: opt(t.Boolean()), value: loose };
const classMembers = {
  name: opt(t.String()),
  label: loose,
  fields: opt(t.Array(t.String())),
  layout: opt(t.String()),
  metadata: loose,
};
const classField = t.Object({ class: gid, field: gid, before_field: opt(t.String()) });
const layoutMembers = {
  name: opt(t.String()),
  root: opt(t.String()),
  components: opt(t.Record(t.String(), t.Unknown())),
};
const componentCreate = {
  parent: t.String(),
  type: t.String(),
  name: opt(t.Nullable(t.String())),
  options: opt(t.Record(t.String(), t.Unknown())),
  before_component: opt(t.String()),
};
const componentModify = {
  component: t.String(),
  type: opt(t.String()),
  name: opt(t.Nullable(t.String())),
  options: opt(t.Record(t.String(), t.Unknown())),
};
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
 * layouts/get, schema/search and schema/bulk. Owners, members and API users alike. All are
 * operations: each served as its endpoint and runnable in a batch (src/http/operations.ts).
 */
export const schemaOperations = [
  operation(
    "fields/get",
    t.Object({ field: opt(t.String()), fields: opt(t.Array(t.String())) }),
    fieldService.getFields,
    {
      summary: "One field (`field`) or several (`fields`)",
      tags: fieldTags,
    },
  ),
  operation("fields/create", t.Object(fieldMembers), fieldService.createField, {
    summary: "Create a field (new until committed); every member optional",
    tags: fieldTags,
  }),
  operation("fields/modify", t.Object({ field: gid, ...fieldMembers }), fieldService.modifyField, {
    summary: "Modify a field through its working copy",
    tags: fieldTags,
  }),
  operation("fields/commit", t.Object({ field: gid, dry_run: opt(t.Boolean()) }), fieldService.commitField, {
    summary: "Commit a field's working copy (or a new field); `dry_run: true` only reports what would change",
    tags: fieldTags,
  }),
  operation("fields/revert", one("field"), fieldService.revertField, {
    summary: "Drop a field's working copy (a new field is removed)",
    tags: fieldTags,
  }),
  operation("fields/save_as_new", one("field"), fieldService.saveAsNewField, {
    summary: "Save a field's working copy as a field of its own",
    tags: fieldTags,
  }),
  operation("fields/copy", one("field"), fieldService.copyField, {
    summary: "Copy a committed field as a new field",
    tags: fieldTags,
  }),
  operation("fields/delete", one("field"), fieldService.deleteField, {
    summary: "Delete a field nobody uses",
    tags: fieldTags,
  }),
  operation("fields/metadata/set", t.Object({ field: gid, ...metadataSet }), fieldService.setFieldMetadata, {
    summary: "Add or replace one metadata entry of a field",
    tags: fieldTags,
  }),
  operation("fields/metadata/clear", t.Object({ field: gid, name: t.String() }), fieldService.clearFieldMetadata, {
    summary: "Remove one metadata entry of a field",
    tags: fieldTags,
  }),
  operation(
    "classes/get",
    t.Object({ class: opt(t.String()), classes: opt(t.Array(t.String())) }),
    classService.getClasses,
    {
      summary: "One class (`class`) or several (`classes`)",
      tags: classTags,
    },
  ),
  operation("classes/create", t.Object(classMembers), classService.createClass, {
    summary: "Create a class with its layout (new until committed)",
    tags: classTags,
  }),
  operation("classes/modify", t.Object({ class: gid, ...classMembers }), classService.modifyClass, {
    summary: "Modify a class through its working copy",
    tags: classTags,
  }),
  operation("classes/commit", t.Object({ class: gid, dry_run: opt(t.Boolean()) }), classService.commitClass, {
    summary: "Commit a class (and its layout); `dry_run: true` only reports",
    tags: classTags,
  }),
  operation("classes/revert", one("class"), classService.revertClass, {
    summary: "Drop a class's working copy (a new class is removed)",
    tags: classTags,
  }),
  operation("classes/save_as_new", one("class"), classService.saveAsNewClass, {
    summary: "Save a class's working copy as a class of its own",
    tags: classTags,
  }),
  operation("classes/copy", one("class"), classService.copyClass, {
    summary: "Copy a committed class (and its layout) as a new class",
    tags: classTags,
  }),
  operation("classes/delete", one("class"), classService.deleteClass, {
    summary: "Delete a class nobody uses",
    tags: classTags,
  }),
  operation("classes/fields/add", classField, classService.addClassField, {
    summary: "Add a committed field to a class",
    tags: classTags,
  }),
  operation("classes/fields/move", classField, classService.moveClassField, {
    summary: "Move a field inside a class",
    tags: classTags,
  }),
  operation("classes/fields/remove", t.Object({ class: gid, field: gid }), classService.removeClassField, {
    summary: "Remove a field from a class",
    tags: classTags,
  }),
  operation("classes/metadata/set", t.Object({ class: gid, ...metadataSet }), classService.setClassMetadata, {
    summary: "Add or replace one metadata entry of a class",
    tags: classTags,
  }),
  operation("classes/metadata/clear", t.Object({ class: gid, name: t.String() }), classService.clearClassMetadata, {
    summary: "Remove one metadata entry of a class",
    tags: classTags,
  }),
  operation(
    "classes/layouts/modify",
    t.Object({ class: gid, ...layoutMembers }),
    async (ctx, actor, projectGid, body) =>
      await layoutService.modifyLayout(ctx, actor, projectGid, "class", body.class, body),
    { summary: "Modify a class's layout (name, root, components)", tags: classTags },
  ),
  operation(
    "classes/layouts/components/create",
    t.Object({ class: gid, ...componentCreate }),
    async (ctx, actor, projectGid, body) =>
      await layoutService.createComponent(ctx, actor, projectGid, "class", body.class, body),
    { summary: "Add a component to a class's layout", tags: classTags },
  ),
  operation(
    "classes/layouts/components/modify",
    t.Object({ class: gid, ...componentModify }),
    async (ctx, actor, projectGid, body) =>
      await layoutService.modifyComponent(ctx, actor, projectGid, "class", body.class, body),
    { summary: "Modify a component of a class's layout", tags: classTags },
  ),
  operation(
    "classes/layouts/components/delete",
    t.Object({ class: gid, component: t.String() }),
    async (ctx, actor, projectGid, body) =>
      await layoutService.deleteComponent(ctx, actor, projectGid, "class", body.class, body),
    { summary: "Delete a component (and its content) from a class's layout", tags: classTags },
  ),
  operation(
    "definitions/get",
    t.Object({ definition: opt(t.String()), definitions: opt(t.Array(t.String())) }),
    definitionService.getDefinitions,
    { summary: "One definition (`definition`) or several (`definitions`)", tags: definitionTags },
  ),
  operation("definitions/create", t.Object(definitionMembers), definitionService.createDefinition, {
    summary: "Create a definition with its layout (new until committed)",
    tags: definitionTags,
  }),
  operation(
    "definitions/modify",
    t.Object({ definition: gid, ...definitionMembers }),
    definitionService.modifyDefinition,
    {
      summary: "Modify a definition through its working copy",
      tags: definitionTags,
    },
  ),
  operation(
    "definitions/commit",
    t.Object({ definition: gid, dry_run: opt(t.Boolean()) }),
    definitionService.commitDefinition,
    {
      summary: "Commit a definition (and its layout); `dry_run: true` only reports",
      tags: definitionTags,
    },
  ),
  operation("definitions/revert", one("definition"), definitionService.revertDefinition, {
    summary: "Drop a definition's working copy (a new definition is removed)",
    tags: definitionTags,
  }),
  operation("definitions/save_as_new", one("definition"), definitionService.saveAsNewDefinition, {
    summary: "Save a definition's working copy as a definition of its own",
    tags: definitionTags,
  }),
  operation("definitions/copy", one("definition"), definitionService.copyDefinition, {
    summary: "Copy a committed definition (and its layout) as a new definition",
    tags: definitionTags,
  }),
  operation("definitions/delete", one("definition"), definitionService.deleteDefinition, {
    summary: "Delete a definition nobody uses",
    tags: definitionTags,
  }),
  operation("definitions/classes/add", definitionClass, definitionService.addDefinitionClass, {
    summary: "Add a committed class to a definition",
    tags: definitionTags,
  }),
  operation("definitions/classes/move", definitionClass, definitionService.moveDefinitionClass, {
    summary: "Move a class inside a definition",
    tags: definitionTags,
  }),
  operation(
    "definitions/classes/remove",
    t.Object({ definition: gid, class: gid }),
    definitionService.removeDefinitionClass,
    {
      summary: "Remove a class from a definition",
      tags: definitionTags,
    },
  ),
  operation("definitions/fields/add", definitionField, definitionService.addDefinitionField, {
    summary: "Add a committed field to a definition",
    tags: definitionTags,
  }),
  operation("definitions/fields/move", definitionField, definitionService.moveDefinitionField, {
    summary: "Move a field inside a definition",
    tags: definitionTags,
  }),
  operation(
    "definitions/fields/remove",
    t.Object({ definition: gid, field: gid }),
    definitionService.removeDefinitionField,
    {
      summary: "Remove a field from a definition",
      tags: definitionTags,
    },
  ),
  operation(
    "definitions/metadata/set",
    t.Object({ definition: gid, ...metadataSet }),
    definitionService.setDefinitionMetadata,
    {
      summary: "Add or replace one metadata entry of a definition",
      tags: definitionTags,
    },
  ),
  operation(
    "definitions/metadata/clear",
    t.Object({ definition: gid, name: t.String() }),
    definitionService.clearDefinitionMetadata,
    {
      summary: "Remove one metadata entry of a definition",
      tags: definitionTags,
    },
  ),
  operation("definitions/fieldlists/fields/add", fieldlistField, definitionService.addFieldlistField, {
    summary: "Add one of the definition's fields to a fieldlist",
    tags: definitionTags,
  }),
  operation("definitions/fieldlists/fields/move", fieldlistField, definitionService.moveFieldlistField, {
    summary: "Move a field inside a definition's fieldlist",
    tags: definitionTags,
  }),
  operation(
    "definitions/fieldlists/fields/remove",
    t.Object({ definition: gid, fieldlist: t.String(), field: gid }),
    definitionService.removeFieldlistField,
    { summary: "Remove a field from a definition's fieldlist", tags: definitionTags },
  ),
  operation("definitions/childdefinitions/add", childDefinition, definitionService.addChildDefinition, {
    summary: "Offer a committed definition for new children",
    tags: definitionTags,
  }),
  operation("definitions/childdefinitions/move", childDefinition, definitionService.moveChildDefinition, {
    summary: "Move a child definition",
    tags: definitionTags,
  }),
  operation(
    "definitions/childdefinitions/remove",
    t.Object({ definition: gid, childdefinition: gid }),
    definitionService.removeChildDefinition,
    { summary: "Stop offering a child definition", tags: definitionTags },
  ),
  operation(
    "definitions/layouts/modify",
    t.Object({ definition: gid, ...layoutMembers }),
    async (ctx, actor, projectGid, body) =>
      await layoutService.modifyLayout(ctx, actor, projectGid, "definition", body.definition, body),
    { summary: "Modify a definition's layout (name, root, components)", tags: definitionTags },
  ),
  operation(
    "definitions/layouts/components/create",
    t.Object({ definition: gid, ...componentCreate }),
    async (ctx, actor, projectGid, body) =>
      await layoutService.createComponent(ctx, actor, projectGid, "definition", body.definition, body),
    { summary: "Add a component to a definition's layout", tags: definitionTags },
  ),
  operation(
    "definitions/layouts/components/modify",
    t.Object({ definition: gid, ...componentModify }),
    async (ctx, actor, projectGid, body) =>
      await layoutService.modifyComponent(ctx, actor, projectGid, "definition", body.definition, body),
    { summary: "Modify a component of a definition's layout", tags: definitionTags },
  ),
  operation(
    "definitions/layouts/components/delete",
    t.Object({ definition: gid, component: t.String() }),
    async (ctx, actor, projectGid, body) =>
      await layoutService.deleteComponent(ctx, actor, projectGid, "definition", body.definition, body),
    { summary: "Delete a component (and its content) from a definition's layout", tags: definitionTags },
  ),
  operation(
    "layouts/get",
    t.Object({ layout: opt(t.String()), layouts: opt(t.Array(t.String())) }),
    layoutService.getLayouts,
    {
      summary: "One layout (`layout`) or several (`layouts`)",
      tags: layoutTags,
    },
  ),
  operation(
    "schema/search",
    t.Object({
      language: opt(t.String()),
      q: opt(t.String()),
      filter: loose,
      "page.top": opt(t.Integer({ minimum: 0 })),
      "page.size": opt(t.Integer({ minimum: 0 })),
    }),
    searchSchema,
    {
      summary:
        "Search definitions, classes and fields by `q` (name, label, field type) and/or `filter` (the shared filter language)",
      tags: searchTags,
    },
  ),
  operation(
    "schema/bulk/get",
    t.Object({ selection, "page.size": opt(t.Integer()), "page.cursor": opt(t.Nullable(t.String())) }),
    bulkGet,
    { summary: "One page of a selection of schema items (gids and search elements)", tags: searchTags },
  ),
  operation(
    "schema/bulk/commit",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startSchemaBulk(ctx, actor, projectGid, "commit", body),
    { summary: "Commit every selected schema item, as a job (answers job.token)", tags: searchTags },
  ),
  operation(
    "schema/bulk/revert",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startSchemaBulk(ctx, actor, projectGid, "revert", body),
    { summary: "Revert every selected schema item, as a job (answers job.token)", tags: searchTags },
  ),
  operation(
    "schema/bulk/save_as_new",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startSchemaBulk(ctx, actor, projectGid, "save_as_new", body),
    { summary: "Save as new every selected schema item, as a job (answers job.token)", tags: searchTags },
  ),
  operation(
    "schema/bulk/copy",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startSchemaBulk(ctx, actor, projectGid, "copy", body),
    { summary: "Copy every selected schema item, as a job (answers job.token)", tags: searchTags },
  ),
  operation(
    "schema/bulk/delete",
    bulkBody,
    async (ctx, actor, projectGid, body) => await startSchemaBulk(ctx, actor, projectGid, "delete", body),
    { summary: "Delete every selected schema item, as a job (answers job.token)", tags: searchTags },
  ),
];
