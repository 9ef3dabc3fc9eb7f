-- pad is slack at the end of a large block's row (zeros), sized so that a
-- write that makes the rendering a little longer or shorter leaves the row
-- the same size: SQLite then overwrites the row in place and writes only
-- the pages that changed, instead of every page of a 140 KB rendering on
-- each append (see padSet in package memory). NULL for small blocks.
ALTER TABLE blocks ADD COLUMN pad BLOB;
