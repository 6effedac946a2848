-- The shop database of flows/agent-example, for PostgreSQL: psql -d shop -f data/shop.sql
CREATE TABLE products (id integer PRIMARY KEY, name text NOT NULL, price numeric(8, 2) NOT NULL);
INSERT INTO products VALUES
  (1, 'notebook', 19.90), (2, 'desk lamp', 149.00), (3, 'pencil set', 4.50),
  (4, 'stapler', 12.00), (5, 'backpack', 59.00), (6, 'mug', 8.50);
CREATE TABLE orders (
  id integer PRIMARY KEY,
  product_id integer NOT NULL REFERENCES products (id),
  units integer NOT NULL
);
INSERT INTO orders VALUES
  (1, 1, 3), (2, 2, 1), (3, 3, 10), (4, 1, 2), (5, 3, 6), (6, 2, 2), (7, 2, 1),
  (8, 1, 5), (9, 3, 12), (10, 4, 2), (11, 5, 1), (12, 6, 7), (13, 4, 3), (14, 6, 2);
