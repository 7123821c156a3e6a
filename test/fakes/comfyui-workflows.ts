/** Small API-format graphs for tests of the fake ComfyUI (no fixture needed). */

/** ComfyUI's default txt2img workflow, node ids 3–9 as in the real 0.27.0 captures. */
export function defaultWorkflow(text = 'a lighthouse at dusk', seed = 42): Record<string, any> {
  return {
    '3': {
      class_type: 'KSampler',
      inputs: {
        seed,
        steps: 20,
        cfg: 8,
        sampler_name: 'euler',
        scheduler: 'normal',
        denoise: 1,
        model: ['4', 0],
        positive: ['6', 0],
        negative: ['7', 0],
        latent_image: ['5', 0],
      },
    },
    '4': { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'v1-5-pruned-emaonly-fp16.safetensors' } },
    '5': { class_type: 'EmptyLatentImage', inputs: { width: 512, height: 512, batch_size: 1 } },
    '6': { class_type: 'CLIPTextEncode', inputs: { text, clip: ['4', 1] } },
    '7': { class_type: 'CLIPTextEncode', inputs: { text: 'blurry', clip: ['4', 1] } },
    '8': { class_type: 'VAEDecode', inputs: { samples: ['3', 0], vae: ['4', 2] } },
    '9': { class_type: 'SaveImage', inputs: { filename_prefix: 'komfy_apitest', images: ['8', 0] } },
  };
}

/** LoadImage(`image`) → PreviewImage: the smallest graph that needs an upload. */
export function loadImageWorkflow(image: string): Record<string, any> {
  return {
    '1': { class_type: 'LoadImage', inputs: { image } },
    '2': { class_type: 'PreviewImage', inputs: { images: ['1', 0] } },
  };
}
