-- Placeholder for blocks35's migration 0016 (worked on in parallel), so
-- that 0017 applies on this branch. At merge, blocks35's 0016 replaces
-- this file and its line in testdata/released.txt.
SELECT 1;
