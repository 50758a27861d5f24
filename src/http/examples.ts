/**
 * Example requests and answers of the foundation endpoints, shown in the OpenAPI document
 * (`/api/openapi.json`) and matching docs/api.md. They are the real shapes the routes return.
 */
import { LANGUAGES, LANGUAGE_CODES } from "../core/languages";
import { VERSION } from "../version";

const ADA = "u7k2m9x4q1w8e5r3t6y0";
const BOB = "b3n8v1c6x9z2l5k7j4h0";
const PROJECT = "p5d2f8g1h7j3k9l4m6n0";

const ok = (result: Record<string, unknown>, data: Record<string, unknown> = {}) => ({ success: true, result, data });

const adaFull = {
  gid: ADA,
  username: "ada",
  email: "ada@example.com",
  name: "Ada Lovelace",
  avatar: null,
  status: "active",
  options: { language: "en", timezone: "Europe/London" },
};
const bobShort = {
  gid: BOB,
  username: "bob",
  name: "Bob Baker",
  avatar: "b3n8v1c6x9z2l5k7j4h0-x1y2z3a4.png",
  status: "active",
};
const projectFullExample = {
  gid: PROJECT,
  name: "Catalogue",
  icon: "",
  owner: ADA,
  status: "active",
  options: {
    timezone: "Europe/London",
    languages: ["en"],
    channels: { __all__: "[all records]", c4m8q2w6e1r5t9y3u7i0: "Main channel" },
    orderedchannels: ["__all__", "c4m8q2w6e1r5t9y3u7i0"],
    orderings: { o2k6m1n5b9v3c7x4z8l0: "Main ordering" },
    orderedorderings: ["o2k6m1n5b9v3c7x4z8l0"],
    fieldlists: { f9h3j7k2l6z1x5c8v4b0: "Main fieldlist" },
    orderedfieldlists: ["f9h3j7k2l6z1x5c8v4b0"],
    imageserver: { type: "ccdam", options: {} },
  },
  backups: { versions: [], next_version: 1 },
  build: 1,
};
const ownerMembership = {
  project_gid: PROJECT,
  user_gid: ADA,
  status: "active",
  roles: ["owner"],
  options: {
    notifications: { email: "ada@example.com", events: ["all"], frequency: "immediate" },
    rate_limit_per_second: null,
  },
};
const bobMembershipShort = { project_gid: PROJECT, user_gid: BOB, status: "active", roles: ["member"] };

const initAnswer = ok(
  { user: ADA, user_projects: { [PROJECT]: ["owner"] }, "cc.version": VERSION, "cc.cursor": 42 },
  {
    "cc.users": { [ADA]: adaFull, [BOB]: bobShort },
    "cc.projects": { [PROJECT]: projectFullExample },
    "cc.projects_members": [ownerMembership],
    "cc.languages": LANGUAGES,
  },
);
const oneProject = (p: Record<string, unknown>) =>
  ok({ project: PROJECT }, { "cc.projects": { [PROJECT]: { ...projectFullExample, ...p } } });

// The project session calls and the invitation link, with the gids docs/members.md and docs/apikeys.md show.
const P = "y3rte5023pmpscmxly7e";
const OLIVIA = "cqkz3yd540igllkxpqug";
const BOBBY = "t9hyjyc7otvhqyyg8m47";
const KEY_USER = "9mewb6p5xdqnhi90cibt";
const INVITEE = "uxo7mma1je6bqz3x4zif";
const shortUser = (gid: string, username: string, status = "active") => ({
  gid,
  username,
  name: "",
  avatar: null,
  status,
});
const projectOfInit = {
  gid: P,
  name: "Catalogue",
  icon: "",
  owner: OLIVIA,
  status: "active",
  created_on: 1795291902.508,
  updated_on: 1795291902.508,
  last_backed_up: null,
};
const noDictionaries = { "cc.languages": {}, definitions: {}, classes: {}, fields: {}, layouts: {}, queries: {} };
const projectSession = (
  user: string,
  members: string[],
  cursor: number,
  users: Record<string, unknown>,
  memberships: unknown[],
) =>
  ok(
    {
      user,
      user_projects: {},
      project: P,
      project_members: members,
      last_backed_up: null,
      "cc.version": VERSION,
      "cc.cursor": cursor,
      cursor,
    },
    { "cc.users": users, "cc.projects": { [P]: projectOfInit }, "cc.projects_members": memberships, ...noDictionaries },
  );
const oliviaOwner = { project_gid: P, user_gid: OLIVIA, status: "active", roles: ["owner"] };

export const examples = {
  projectLogin: {
    request: { username: "bob", password: "correct-horse-1" },
    answer: projectSession(
      BOBBY,
      [OLIVIA, BOBBY],
      29,
      {
        [BOBBY]: {
          gid: BOBBY,
          username: "bob",
          email: "bob@example.test",
          name: "",
          avatar: null,
          status: "active",
          options: { language: "en", timezone: "UTC" },
        },
        [OLIVIA]: shortUser(OLIVIA, "olivia"),
      },
      [
        oliviaOwner,
        {
          project_gid: P,
          user_gid: BOBBY,
          status: "active",
          roles: ["member"],
          options: {
            notifications: { email: "bob@example.test", events: ["all"], frequency: "immediate" },
            rate_limit_per_second: null,
          },
        },
      ],
    ),
  },
  projectAuth: {
    request: { api_key: "apis_py8D002zApzZMnrKqKu3re2ajuecq2DPQgEudXo9MNI" },
    answer: projectSession(
      KEY_USER,
      [OLIVIA, BOBBY, KEY_USER],
      34,
      {
        [KEY_USER]: {
          gid: KEY_USER,
          username: null,
          email: "",
          name: "Shop sync",
          avatar: null,
          status: "active",
          options: { language: "en", timezone: "UTC" },
        },
        [OLIVIA]: shortUser(OLIVIA, "olivia"),
        [BOBBY]: shortUser(BOBBY, "bob"),
      },
      [
        oliviaOwner,
        { project_gid: P, user_gid: BOBBY, status: "active", roles: ["member"] },
        {
          project_gid: P,
          user_gid: KEY_USER,
          status: "active",
          roles: ["api"],
          options: { rate_limit_per_second: 20 },
        },
      ],
    ),
  },
  initInvite: {
    request: { invitee: INVITEE, project: P },
    answer: ok(
      { invitee: INVITEE, project: P, project_members: [OLIVIA, BOBBY] },
      {
        "cc.users": {
          [INVITEE]: shortUser(INVITEE, "", "invited"),
          [OLIVIA]: shortUser(OLIVIA, "olivia"),
          [BOBBY]: shortUser(BOBBY, "bob"),
        },
        "cc.projects": { [P]: { gid: P, name: "Catalogue", icon: "", owner: OLIVIA, status: "active" } },
        "cc.projects_members": [
          { project_gid: P, user_gid: INVITEE, status: "invited", roles: ["member"] },
          oliviaOwner,
          { project_gid: P, user_gid: BOBBY, status: "active", roles: ["member"] },
        ],
      },
    ),
  },
  declineInvite: {
    request: { invitee: INVITEE, project: P },
    answer: ok(
      { project: P },
      {
        "cc.projects_members": [
          {
            project_gid: P,
            user_gid: INVITEE,
            status: "declined",
            roles: ["member"],
            options: { language: "en", timezone: "UTC" },
          },
        ],
      },
    ),
  },
  uploadAvatar: { answer: ok({ user: ADA }, { "cc.users": { [ADA]: { ...adaFull, avatar: `${ADA}-k3v9x2m4.png` } } }) },
  ping: ok({ pong: true, "cc.version": VERSION }),
  login: { request: { username: "ada", password: "correct-horse-1" }, answer: initAnswer },
  init: initAnswer,
  languages: ok({ languages: LANGUAGE_CODES }, { "cc.languages": LANGUAGES }),
  usersGet: { request: { user: BOB }, answer: ok({ user: BOB }, { "cc.users": { [BOB]: bobShort } }) },
  batch: {
    request: {
      requests: [
        { path: "queries/create", body: { type: "record", name: "Shoes", q: "shoe" } },
        { path: "queries/update", body: { query: "q5z3y3v6c1l5ig2wepq0", name: "Summer sale" } },
      ],
    },
    answer: ok({
      results: [
        {
          success: true,
          result: { query: "q80c7ydvz0p6gjfwek60" },
          data: {
            queries: {
              q80c7ydvz0p6gjfwek60: {
                gid: "q80c7ydvz0p6gjfwek60",
                type: "record",
                name: "Shoes",
                q: "shoe",
                filter: [],
              },
            },
          },
        },
        {
          success: true,
          result: { query: "q5z3y3v6c1l5ig2wepq0" },
          data: {
            queries: {
              q5z3y3v6c1l5ig2wepq0: {
                gid: "q5z3y3v6c1l5ig2wepq0",
                type: "record",
                name: "Summer sale",
                q: "",
                filter: [],
              },
            },
          },
        },
      ],
    }),
  },
  membersGet: {
    request: { project: PROJECT, member: BOB },
    answer: ok({ user: BOB }, { "cc.users": { [BOB]: bobShort }, "cc.projects_members": [bobMembershipShort] }),
  },
  username: {
    request: { username: "new.user" },
    answer: ok({ username: "new.user", available: true }),
    taken: ok({
      username: "bob",
      available: false,
      validation: [{ field: "username", rule: "unavailable", message: "This username is taken" }],
    }),
  },
  projectsGet: { request: { project: PROJECT }, answer: oneProject({}) },
  projectsCreate: {
    request: { name: "Catalogue", timezone: "Europe/London" },
    answer: ok(
      { project: PROJECT, project_members: [ADA] },
      { "cc.projects": { [PROJECT]: projectFullExample }, "cc.projects_members": [ownerMembership] },
    ),
  },
  projectsUpdate: {
    request: { project: PROJECT, name: "Catalogue 2027" },
    answer: oneProject({ name: "Catalogue 2027" }),
  },
  projectsUploadIcon: { answer: oneProject({ icon: `${PROJECT}-h4k8s2d1.png` }) },
  projectsDeleteIcon: { request: { project: PROJECT }, answer: oneProject({ icon: "" }) },
  projectsDelete: { request: { project: PROJECT }, answer: oneProject({ status: "deleted" }) },
  projectsUndelete: { request: { project: PROJECT }, answer: oneProject({ status: "active" }) },
  projectsPermanentDelete: { request: { project: PROJECT }, answer: ok({}, {}) },
  syncGet: {
    request: { cc_cursor: 40, project: PROJECT, cursor: 40 },
    answer: ok({
      sync: [
        { type: "cc", cursor: 41, action: "UPDATE", data_type: "cc.projects", data_key: PROJECT, data: null },
        {
          type: "cc",
          cursor: 42,
          action: "INSERT",
          data_type: "cc.projects_members",
          data_key: `${PROJECT}/${BOB}`,
          data: null,
        },
      ],
    }),
  },
  syncCursors: { request: { project: PROJECT }, answer: ok({ "cc.cursor": 42, cursor: 42 }) },
};
