SELECT p.name AS product, SUM(o.units) AS units
FROM orders AS o JOIN products AS p ON p.id = o.product_id
GROUP BY p.name
ORDER BY units DESC
LIMIT 5
