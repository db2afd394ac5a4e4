-- A host migration numbered clear of pgoutbox's V1..V3, for one Flyway run over both locations.
CREATE TABLE host_orders (id text PRIMARY KEY);
