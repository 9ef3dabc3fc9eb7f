-- Placeholder for migration 0018 (the sync work's), so that 0019 has no gap
-- on this branch. The integrator replaces it with the real 0018.
SELECT 1;
