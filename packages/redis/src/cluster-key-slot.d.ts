declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of a key, honouring its `{hash tag}`. */
  export default function calculateSlot(key: string): number;
}
