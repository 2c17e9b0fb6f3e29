// A typed client of the Rocket Rides API, from docs/openapi.yaml alone: run.sh generates the
// document's types with openapi-typescript (rocket-rides-api.ts, beside this file at build time),
// openapi-fetch makes the calls, and tsc checks every path, parameter, body and answer against
// them. It creates a ride, sends the same key again and reads the ride back, against the live API
// that client_test.js starts (ROCKET_RIDES_API, ROCKET_RIDES_TOKEN); exits 1 on any surprise.
// docs/http-api.md shows the call in createRide().
import createClient from 'openapi-fetch';
import type {operations, paths} from './rocket-rides-api.js';

// The answers, named by the document's operation ids.
type CreatedRide = operations['createRide']['responses'][201]['content']['application/json'];
type ReadRide = operations['getRide']['responses'][200]['content']['application/json'];

const api = createClient<paths>({
  baseUrl: process.env.ROCKET_RIDES_API,
  headers: {Authorization: `Bearer ${process.env.ROCKET_RIDES_TOKEN}`},
});

async function createRide(key: string): Promise<{created: CreatedRide; replayed: boolean}> {
  const {data, error, response} = await api.POST('/rides', {
    params: {header: {'Idempotency-Key': key}},
    body: {origin_lat: 37.7749, origin_lon: -122.4194, target_lat: 37.8044, target_lon: -122.2712},
  });
  if (error) throw new Error(`createRide answered ${response.status}: ${error.error.type}: ${error.error.message}`);
  return {created: data, replayed: response.headers.get('Idempotent-Replayed') === 'true'};
}

async function getRide(id: number): Promise<ReadRide> {
  const {data, error, response} = await api.GET('/rides/{id}', {params: {path: {id}}});
  if (error) throw new Error(`getRide answered ${response.status}: ${error.error.message}`);
  return data;
}

// Never called: tsc must refuse each marked line, or the build of this client fails
// (@ts-expect-error on a line without an error is itself an error). Proves the generated types
// carry the document's rules rather than `any`.
export function typesFollowTheDocument(): void {
  // @ts-expect-error: createRide requires the Idempotency-Key header
  void api.POST('/rides', {body: {origin_lat: 1, origin_lon: 2, target_lat: 3, target_lon: 4}});
  // @ts-expect-error: target_lon is required
  void api.POST('/rides', {params: {header: {'Idempotency-Key': 'k'}}, body: {origin_lat: 1, origin_lon: 2, target_lat: 3}});
  // @ts-expect-error: the document has no DELETE /rides/{id}
  void api.DELETE('/rides/{id}', {params: {path: {id: 1}}});
  const ride = {} as ReadRide['ride'];
  // @ts-expect-error: cancelled_at may be null
  ride.cancelled_at.length;
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(what);
}

const key = crypto.randomUUID();
const first = await createRide(key);
check(first.created.message === 'Ride created and charged.', `unexpected message ${first.created.message}`);
check(!first.replayed, 'the first request with a key was a replay');
console.log(`ok   createRide: ride ${first.created.ride.id}, charge ${first.created.ride.stripe_charge_id}`);

const again = await createRide(key);
check(again.replayed, 'the same key again was not answered as a replay (Idempotent-Replayed)');
check(JSON.stringify(again.created) === JSON.stringify(first.created), 'the replay is not the first answer');
console.log(`ok   createRide again with the same key: replayed, ride ${again.created.ride.id}`);

const read = await getRide(first.created.ride.id);
check(JSON.stringify(read.ride) === JSON.stringify(first.created.ride), 'getRide disagrees with createRide');
check(read.ride.cancelled_at === null, 'a new ride is cancelled');
console.log(`ok   getRide ${read.ride.id}: created at ${read.ride.created_at}`);
