-- An UPDATE of messages logs the rows' old ids as well as their new ones
-- for the text cache: an id changed by hand logged the new id only, and a
-- cache following the log kept the old one beside it. (Archival entries'
-- old ids are logged by their neighbour trigger, 0029.) The same ids for
-- every other update: old and new are one set.
CREATE FUNCTION engram_text_log_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_text_log (kind, id)
        SELECT TG_ARGV[0]::bigint, id FROM new_rows UNION SELECT TG_ARGV[0]::bigint, id FROM old_rows;
    RETURN NULL;
END $$;

DROP TRIGGER search_text_messages_au ON messages;
CREATE TRIGGER search_text_messages_au AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_log_moved('4');
