-- The orders of the run's period: :start and :end are the run's parameters, bound by the
-- database driver (praxis run flows/warehouse-report -p start=2024-02-01).
SELECT order_id, day, region, product, units, amount
FROM orders
WHERE day BETWEEN CAST(:start AS DATE) AND CAST(:end AS DATE)
ORDER BY order_id
