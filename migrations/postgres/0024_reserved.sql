-- Placeholder for the migration another branch adds as 0024; the merge
-- keeps that one and drops this file.
SELECT 1;
