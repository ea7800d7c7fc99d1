-- What is left, read at one instant: {queued, leased, waiting, revisits}. Read one by one, a
-- URL moving between them in between (a retry falling due, a lease given back) was missed.
return {tonumber(redis.call('HGET', P .. 'counters', 'queued') or '0'), redis.call('ZCARD', P .. 'leases'),
        redis.call('ZCARD', P .. 'waiting'), redis.call('ZCARD', P .. 'revisits')}
