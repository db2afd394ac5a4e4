-- The example's own tables, migrated by its own Flyway (history table example_schema_history)
-- next to the pgoutbox migrations (history table pgoutbox_schema_history), in the same schema.

-- The order service: one row per order, its lines, and the version every event carries.
CREATE TABLE orders (
    id          uuid PRIMARY KEY,
    customer_id varchar(100) NOT NULL,
    status      varchar(20)  NOT NULL CHECK (status IN ('CREATED', 'PAID', 'CANCELLED')),
    -- 1 when created, +1 per change; each event carries it, so consumers can check their order.
    version     int          NOT NULL CHECK (version > 0),
    total       numeric(14, 2) NOT NULL,
    created_at  timestamptz  NOT NULL DEFAULT now(),
    updated_at  timestamptz  NOT NULL DEFAULT now()
);

CREATE TABLE order_items (
    order_id   uuid          NOT NULL REFERENCES orders (id),
    line       int           NOT NULL,
    sku        varchar(64)   NOT NULL,
    quantity   int           NOT NULL CHECK (quantity > 0),
    unit_price numeric(12, 2) NOT NULL CHECK (unit_price >= 0),
    PRIMARY KEY (order_id, line)
);

-- The shipping consumer: what it has seen of each order, and the shipments it made.
CREATE TABLE shipping_progress (
    order_id     uuid        PRIMARY KEY,
    last_version int         NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- order_id is deliberately not unique: exactly-once is the inbox's job, and the demo counts
-- shipments per order to prove it, rather than letting a constraint hide a second one.
CREATE TABLE shipments (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id         uuid        NOT NULL,
    status           varchar(20) NOT NULL CHECK (status IN ('READY', 'CANCELLED')),
    created_by_event uuid        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shipments_order_id_idx ON shipments (order_id);
