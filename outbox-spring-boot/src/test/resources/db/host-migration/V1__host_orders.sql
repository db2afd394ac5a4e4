-- The host application's own first migration, run by Boot's Flyway in HostFlywayIT.
CREATE TABLE host_orders (id text PRIMARY KEY);
