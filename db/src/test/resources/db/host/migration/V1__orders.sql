-- A host application's own migration, applied with the host's own Flyway history table.
CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL);
