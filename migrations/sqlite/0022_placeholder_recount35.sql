-- Placeholder on branch wt-conv32 only, so that 0023 loads (versions have no
-- gaps): the integrator replaces it with the branch's real file of this number.
SELECT 1;
