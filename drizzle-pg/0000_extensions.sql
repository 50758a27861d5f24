-- Hand-written: what the generated migrations after this one need, before any table.
-- unaccent folds accents (é = e, as FTS5's remove_diacritics 2 does); pg_trgm gives trigram
-- indexes for substring search and autocomplete. Both ship with PostgreSQL (contrib); creating
-- them needs a role that may (the database owner, PostgreSQL 13+, for these trusted extensions).
CREATE EXTENSION IF NOT EXISTS unaccent;--> statement-breakpoint
CREATE EXTENSION IF NOT EXISTS pg_trgm;--> statement-breakpoint
-- apis_simple: exact terms, case and accents folded, no stemming (SQLite: unicode61 remove_diacritics 2).
CREATE TEXT SEARCH CONFIGURATION apis_simple (COPY = simple);--> statement-breakpoint
ALTER TEXT SEARCH CONFIGURATION apis_simple ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart WITH unaccent, simple;--> statement-breakpoint
-- apis_en: English stems, accents folded (SQLite: porter unicode61 remove_diacritics 2). The
-- Snowball stemmer without a stop word list: FTS5 indexes "the" and "with" too.
CREATE TEXT SEARCH DICTIONARY apis_english_stem (TEMPLATE = snowball, Language = english);--> statement-breakpoint
CREATE TEXT SEARCH CONFIGURATION apis_en (COPY = english);--> statement-breakpoint
ALTER TEXT SEARCH CONFIGURATION apis_en ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart WITH unaccent, apis_english_stem;--> statement-breakpoint
-- Text as FTS5's unicode61 tokenizer splits it: every ASCII punctuation character separates
-- tokens. PostgreSQL's parser would otherwise keep e-mail addresses, host names, file paths,
-- decimals and versions as single tokens ("example.com", "1.5"), which FTS5 splits; documents
-- and query terms both go through it. Locale-independent (translate, not a regular expression).
CREATE FUNCTION apis_fts_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT translate(t, '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', '                                ')
$$;--> statement-breakpoint
-- The text of a JSON value that search sees: its strings (and numbers when with_numbers), in
-- document order, joined by spaces; with skip_type, the values of members named "type" below the
-- top are left out (metadata fields are {"type", "is_localized", "value"}). The SQLite triggers
-- of assets_fts do the same with json_tree (drizzle/0009_assets_reference.sql). IMMUTABLE, so
-- generated columns may use it.
CREATE FUNCTION apis_json_text(j jsonb, with_numbers boolean, skip_type boolean) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  WITH RECURSIVE t(key, value, depth) AS (
    SELECT NULL::text, j, 0
    UNION ALL
    SELECT e.key, e.value, t.depth + 1
    FROM t, LATERAL (
      SELECT k AS key, v AS value FROM jsonb_each(CASE WHEN jsonb_typeof(t.value) = 'object' THEN t.value ELSE '{}'::jsonb END) AS o(k, v)
      UNION ALL
      SELECT NULL, v FROM jsonb_array_elements(CASE WHEN jsonb_typeof(t.value) = 'array' THEN t.value ELSE '[]'::jsonb END) AS a(v)
    ) e
  )
  SELECT coalesce(string_agg(value #>> '{}', ' '), '')
  FROM t
  WHERE (jsonb_typeof(value) = 'string' OR (with_numbers AND jsonb_typeof(value) = 'number'))
    AND NOT (skip_type AND key IS NOT DISTINCT FROM 'type' AND depth > 0)
$$;
