-- Placeholder for migration 0014 (the sync work's), so that 0015 has no gap
-- on this branch. The integrator replaces it with the real 0014.
SELECT 1;
