/**
 * A table or column name as an SQL identifier, for the code that works on tables it does not
 * name itself (backups, copies between databases): in double quotes, an inner one doubled. SQLite
 * and PostgreSQL read it alike. The dialect helpers take only plain names, checked, instead.
 */
export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
