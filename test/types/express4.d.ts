/** Express 4 (`express4`, an alias of express@4), for the tests of the versions the adapter supports: typed as Express's. */
declare module 'express4' {
  import express from 'express';
  export default express;
}
