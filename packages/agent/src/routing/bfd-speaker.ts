// The BFD speaker: a second BIRD that runs only the BFD sessions of the node's peers, fed by its
// own announcer from the same model. With it, the BGP BIRD runs none of BFD (withoutBfd).
import type { Logger } from '@flock/api';
import { renderBfdSpeakerConfig, withoutBfd, type BirdControl, type BirdModel } from '@flock/bird';
import { BirdAnnouncer } from './announcer.js';

export class BfdSpeaker {
  private readonly announcer: BirdAnnouncer;

  constructor(configPath: string, control: BirdControl, logger: Logger) {
    this.announcer = new BirdAnnouncer({
      configPath,
      control,
      logger,
      render: renderBfdSpeakerConfig,
      onState: (state) =>
        logger.info('BFD speaker state changed', {
          state: state.status,
          ...('message' in state ? { error: state.message } : {}),
        }),
    });
  }

  /** Hand the speaker the BFD of `model`; returns what the BGP BIRD runs: the model without BFD. */
  announce(model: BirdModel): BirdModel {
    this.announcer.announce(model);
    return withoutBfd(model);
  }

  close(): Promise<void> {
    return this.announcer.close();
  }
}
