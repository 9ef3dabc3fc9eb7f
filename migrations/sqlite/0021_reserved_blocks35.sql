-- Placeholder for blocks35's migration 0021 (worked on in parallel), so
-- that 0022 applies on this branch. At merge, blocks35's 0021 replaces
-- this file and its line in testdata/released.txt.
SELECT 1;
